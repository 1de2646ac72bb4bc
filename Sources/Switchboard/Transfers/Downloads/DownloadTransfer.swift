import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attempt of a download, over any transport: asks for the rest of a partial file (`Range`,
/// `If-Range`, `Accept-Encoding: identity`), decides from the head whether to append, start over or
/// stop (``ResumeRules``), has the destination chosen and checked before any body byte is written
/// (``DownloadPlacement``), reports progress for the whole file, and moves the complete file into
/// place. The transport only writes bytes to a file.
final class DownloadTransfer: TransportTask {
    private struct State {
        var inner: (any TransportTask)?
        var cancelled = false
        /// Where the bytes of the current response start in the file (0 until the head says).
        var offset: Int64 = 0
        /// The offset asked for with `Range` (0 without).
        var requested: Int64 = 0
        /// The record whose validator `If-Range` carried, then the one saved for this response, if any.
        var record: PartialDownload.Record?
        /// The complete file's length, when the server said.
        var expected: Int64?
        /// Where the complete file goes, chosen when the head came.
        var placement: DownloadPlacement?
        /// A `416` said the partial file is already the whole file.
        var alreadyWhole: Int64?
        /// The response can't be used: start over from zero (once).
        var restart = false
        var restarted = false
    }

    private let urlRequest: URLRequest
    private let body: TransferBody?
    private let origin: (any Request)?
    private let destination: DownloadDestination
    private let partial: PartialDownload
    private let resumes: Bool
    /// The app set a `Range` of its own: nothing is resumed.
    private let ownRange: Bool
    private let transport: any Transport
    private let options: TransferOptions
    private let callbacks: TransferCallbacks
    /// Locked: cancel comes from any thread, the transport's head, progress and completion on its queue, a late claim on a global queue.
    private let state = Locked(State())

    private init(
        _ urlRequest: URLRequest, body: TransferBody?, origin: (any Request)?, destination: DownloadDestination, partial: PartialDownload, resumes: Bool,
        transport: any Transport, options: TransferOptions, callbacks: TransferCallbacks
    ) {
        self.urlRequest = urlRequest
        self.body = body
        self.origin = origin
        self.destination = destination
        self.partial = partial
        self.resumes = resumes
        ownRange = urlRequest.value(forHTTPHeaderField: "Range") != nil
        self.transport = transport
        self.options = options
        self.callbacks = callbacks
    }

    /// Starts the attempt; `callbacks` get the head, progress and completion as from a transport, with
    /// the complete file at the destination on success.
    static func perform(
        _ urlRequest: URLRequest, body: TransferBody?, origin: (any Request)? = nil, destination: DownloadDestination, resumes: Bool, directory: URL,
        transport: any Transport, options: TransferOptions, callbacks: TransferCallbacks
    ) -> any TransportTask {
        guard let url = urlRequest.url else {
            return Failed.start(.invalidRequest(reason: "the download has no URL"), callbacks)
        }
        let partial = PartialDownload(url: url, resumeKey: destination.resumeKey, directory: directory)
        let transfer = DownloadTransfer(
            urlRequest, body: body, origin: origin, destination: destination, partial: partial, resumes: resumes, transport: transport, options: options,
            callbacks: callbacks)
        if partial.claim() {
            transfer.start(fromZero: !resumes)
        } else {
            // Another transfer of this URL under this resume key runs, or is still ending: the attempt
            // before this one of the same send (a retry, a resume after a pause), which a dispatcher
            // stops waiting for after a second. Wait for it a little, then give up.
            transfer.claimLater(until: DispatchTime.now() + .seconds(3))
        }
        return transfer
    }

    /// Tries to claim the partial file again every 50 ms until `deadline`, then fails.
    private func claimLater(until deadline: DispatchTime) {
        WorkerQueue.asyncAfter(deadline: .now() + .milliseconds(50)) { [self] in
            if state.withLock({ $0.cancelled }) {
                callbacks.completion(.failure(.cancelled))
            } else if partial.claim() {
                start(fromZero: !resumes)
            } else if DispatchTime.now() < deadline {
                claimLater(until: deadline)
            } else {
                callbacks.completion(
                    .failure(.invalidRequest(reason: "a download of \(urlRequest.url?.absoluteString ?? "?") with resume key \(destination.resumeKey) is already running")))
            }
        }
    }

    func cancel() {
        let inner = state.withLock { state in
            state.cancelled = true
            return state.inner
        }
        inner?.cancel()
    }

    private func start(fromZero: Bool) {
        var request = urlRequest
        // Byte offsets must be offsets of the file, not of a compressed body.
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        var requested: Int64 = 0
        var record: PartialDownload.Record?
        if !fromZero, !ownRange, let point = partial.resumePoint() {
            (requested, record) = (point.offset, point.record)
            request.setValue("bytes=\(point.offset)-", forHTTPHeaderField: "Range")
            request.setValue(point.record.validator, forHTTPHeaderField: "If-Range")
        } else {
            partial.discard()
        }
        do {
            try FileManager.default.createDirectory(at: partial.file.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            end(
                .failure(.transport(URLError(.cannotCreateFile, userInfo: [NSLocalizedDescriptionKey: "cannot create \(partial.file.deletingLastPathComponent().path): \(error)"])))
            )
            return
        }
        state.withLock { state in
            state.requested = requested
            state.offset = 0
            state.record = record
            state.expected = nil
            state.placement = nil
            state.restart = false
            state.alreadyWhole = nil
        }
        var progress: (@Sendable (TransferProgress) -> Void)?
        if let report = callbacks.progress {
            progress = { [state] value in
                let offset = state.withLock { $0.offset }
                var whole = value
                whole.bytesReceived += offset
                whole.expectedBytesToReceive = value.expectedBytesToReceive.map { $0 + offset }
                report(whole)
            }
        }
        let inner = transport.perform(
            TransportRequest(request, body: body, destination: .file(partial.file, offset: requested), origin: origin),
            options: options,
            callbacks: TransferCallbacks(
                head: { [self] head in decide(head) },
                progress: progress,
                completion: { [self] result in transferEnded(result) }
            )
        )
        let cancelled = state.withLock { state in
            state.inner = inner
            return state.cancelled
        }
        if cancelled { inner.cancel() }
    }

    /// What to do with the final head.
    private func decide(_ head: HTTPURLResponse) -> HeadDecision {
        let (requested, sent, restarted) = state.withLock { ($0.requested, $0.record, $0.restarted) }
        // What the bytes can be resumed with, the complete length, where they start in the file.
        let kept: PartialDownload.Record?, expected: Int64?, offset: Int64, decision: HeadDecision
        switch ResumeRules.verdict(head, requested: requested, sent: sent, ownRange: ownRange, method: urlRequest.httpMethod) {
        case .restart(let reason):
            // Restarted once already: a second unusable answer ends the download.
            if !restarted { state.withLock { $0.restart = true } }
            return .fail(.download(.unusableResume(reason: reason)))
        case .failure:
            // The partial file stays as it was (a 503 may pass); the error's body is not kept.
            let failure = ErrorResponse(head, body: Data())
            return .fail(head.statusCode == 401 ? .unauthorized(failure) : .httpStatus(failure))
        case .append(let total):
            kept = sent.map { PartialDownload.Record(key: partial.key, validator: $0.validator, kind: $0.kind, totalLength: total) }
            (expected, offset, decision) = (total, requested, .proceed)
        case .whole(let total):
            // The whole body: the server ignored the range, or the file changed since.
            let validator = ownRange ? nil : ResumeRules.resumeValidator(of: head)
            kept = validator.map { PartialDownload.Record(key: partial.key, validator: $0.validator, kind: $0.kind, totalLength: total) }
            (expected, offset, decision) = (total, 0, requested > 0 ? .writeFromStart : .proceed)
        case .alreadyWhole(let length):
            // No body to receive: the transfer ends here, and its end completes the file.
            kept = sent
            (expected, offset, decision) = (length, requested, .fail(.httpStatus(ErrorResponse(head, body: Data()))))
        }
        // The destination is chosen (user code, no lock held) and checked before any byte is written.
        let placement: DownloadPlacement
        do {
            placement = try DownloadPlacement.choose(destination, temporaryURL: partial.file, response: head)
        } catch {
            return .fail(.download(error))
        }
        state.withLock { state in
            state.placement = placement
            state.offset = offset
            state.expected = expected
            state.record = resumes ? kept : nil
            if case .fail = decision { state.alreadyWhole = expected }
        }
        if case .fail = decision { return decision }
        // No record ever describes bytes it doesn't match, even if the process dies here: a whole body
        // that replaces a partial file first removes the old version's record, then its bytes, and
        // only then is the new version's record saved (before its first byte is written).
        if case .writeFromStart = decision {
            partial.forgetRecord()
            guard partial.empty() else {
                state.withLock { $0.record = nil }
                return .fail(.transport(URLError(.cannotWriteToFile, userInfo: [NSLocalizedDescriptionKey: "cannot empty \(partial.file.path)"])))
            }
        }
        if resumes, let kept {
            try? partial.save(kept)
        } else {
            partial.forgetRecord()
        }
        if let own = callbacks.head?(head), case .fail = own { return own }
        return decision
    }

    private func transferEnded(_ result: Result<TransportResponse, NetworkError>) {
        let (alreadyWhole, restart, cancelled, record, expected) = state.withLock { state -> (Int64?, Bool, Bool, PartialDownload.Record?, Int64?) in
            let restart = state.restart && !state.restarted && !state.cancelled
            if restart { state.restarted = true }
            return (state.alreadyWhole, restart, state.cancelled, state.record, state.expected)
        }
        if restart {
            partial.discard()
            start(fromZero: true)
            return
        }
        switch result {
        case .success(let response):
            let size = partial.size()
            if let expected, expected != size {
                partial.discard()
                end(.failure(.download(.lengthMismatch(expected: expected, received: size))))
                return
            }
            finish(head: response.httpResponse, size: size, bodyLength: response.bodyLength, timing: response.timing, keep: record != nil)
        case .failure(let error):
            if let whole = alreadyWhole, !cancelled, let url = urlRequest.url {
                // The partial file was the whole file (it was cut off right after its last byte).
                let head = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": String(whole)])!
                finish(head: head, size: whole, bodyLength: 0, timing: Timing(start: Date(), timeToFirstByte: nil, duration: 0), keep: record != nil)
                return
            }
            if !resumes || record == nil || error.isUnusableResume { partial.discard() }
            end(.failure(error))
        }
    }

    /// Moves the complete file into place. When that fails, the file is kept to resume from (a `416`
    /// completes it next time) if it has a record, else removed.
    private func finish(head: HTTPURLResponse, size: Int64, bodyLength: Int64, timing: Timing, keep: Bool) {
        guard let placement = state.withLock({ $0.placement }) else {
            partial.discard()
            end(.failure(.invalidRequest(reason: "the download ended without a destination")))
            return
        }
        do {
            try placement.move(from: partial.file)
        } catch {
            if !keep || !resumes { partial.discard() }
            end(.failure(.download(error)))
            return
        }
        partial.forgetRecord()
        // Progress ends exactly at the whole file.
        callbacks.progress?(TransferProgress(bytesSent: 0, expectedBytesToSend: 0, bytesReceived: size, expectedBytesToReceive: size))
        end(.success(TransportResponse(httpResponse: head, fileURL: placement.file, bodyLength: bodyLength, timing: timing)))
    }

    private func end(_ result: Result<TransportResponse, NetworkError>) {
        partial.release()
        callbacks.completion(result)
    }
}

extension NetworkError {
    /// Whether this is ``DownloadError/unusableResume(reason:)``.
    fileprivate var isUnusableResume: Bool {
        if case .download(.unusableResume) = self { return true }
        return false
    }
}

/// A transfer that failed before it started: its completion comes on a global queue (never from
/// inside `perform`).
private struct Failed: TransportTask {
    static func start(_ error: NetworkError, _ callbacks: TransferCallbacks) -> any TransportTask {
        WorkerQueue.async { callbacks.completion(.failure(error)) }
        return Failed()
    }

    func cancel() {}
}
