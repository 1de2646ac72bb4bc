import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attempt of a download, over any transport: asks for the rest of a partial file (`Range`,
/// `If-Range`), decides from the head whether to append, start over or stop, reports progress for the
/// whole file, and moves the complete file into place. The transport only writes bytes to a file.
final class DownloadTransfer: TransportTask {
    private struct State {
        var inner: (any TransportTask)?
        var cancelled = false
        /// Where the bytes of the current response start in the file (0 until the head says).
        var offset: Int64 = 0
        /// The offset asked for with `Range` (0 without).
        var requested: Int64 = 0
        /// The record saved for this response, if any.
        var record: PartialDownload.Record?
        /// A `416` said the partial file is already the whole file.
        var alreadyWhole: Int64?
        /// The response can't be appended: start over from zero (once).
        var restart = false
        var restarted = false
    }

    private let urlRequest: URLRequest
    private let body: TransferBody?
    private let origin: (any Request)?
    private let partial: PartialDownload
    private let resumes: Bool
    private let transport: any Transport
    private let options: TransferOptions
    private let callbacks: TransferCallbacks
    private let state = Locked(State())

    private init(
        _ urlRequest: URLRequest, body: TransferBody?, origin: (any Request)?, partial: PartialDownload, resumes: Bool, transport: any Transport, options: TransferOptions,
        callbacks: TransferCallbacks
    ) {
        self.urlRequest = urlRequest
        self.body = body
        self.origin = origin
        self.partial = partial
        self.resumes = resumes
        self.transport = transport
        self.options = options
        self.callbacks = callbacks
    }

    /// Starts the attempt; `callbacks` get the head, progress and completion as from a transport, with
    /// the complete file at the destination on success.
    static func perform(
        _ urlRequest: URLRequest, body: TransferBody?, origin: (any Request)? = nil, destination: URL, resumes: Bool, directory: URL,
        transport: any Transport, options: TransferOptions, callbacks: TransferCallbacks
    ) -> any TransportTask {
        guard let url = urlRequest.url else {
            return Failed.start(.invalidRequest(reason: "the download has no URL"), callbacks)
        }
        let partial = PartialDownload(url: url, destination: destination, directory: directory)
        let transfer = DownloadTransfer(urlRequest, body: body, origin: origin, partial: partial, resumes: resumes, transport: transport, options: options, callbacks: callbacks)
        if partial.claim() {
            transfer.start(fromZero: !resumes)
        } else {
            // Another transfer of this URL to this destination runs, or is still ending: the attempt
            // before this one of the same send (a retry, a resume after a pause), which a dispatcher
            // stops waiting for after a second. Wait for it a little, then give up.
            transfer.claimLater(until: DispatchTime.now() + .seconds(3))
        }
        return transfer
    }

    /// Tries to claim the partial file again every 50 ms until `deadline`, then fails.
    private func claimLater(until deadline: DispatchTime) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { [self] in
            if state.withLock({ $0.cancelled }) {
                callbacks.completion(.failure(.cancelled))
            } else if partial.claim() {
                start(fromZero: !resumes)
            } else if DispatchTime.now() < deadline {
                claimLater(until: deadline)
            } else {
                callbacks.completion(.failure(.invalidRequest(reason: "a download of \(urlRequest.url?.absoluteString ?? "?") to \(partial.destination.path) is already running")))
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
        var requested: Int64 = 0
        var record: PartialDownload.Record?
        if !fromZero, request.value(forHTTPHeaderField: "Range") == nil, let point = partial.resumePoint() {
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
        let requested = state.withLock { $0.requested }
        let validator = Self.validator(of: head)
        let decision: HeadDecision
        switch head.statusCode {
        case 206:
            guard let range = Self.contentRange(of: head), range.start == requested else {
                state.withLock { $0.restart = true }
                return .fail(.transport(URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "the server sent a range other than the one asked for"])))
            }
            let kept = validator ?? state.withLock { $0.record?.validator }
            save(kept.map { PartialDownload.Record(key: partial.key, validator: $0, totalLength: range.total) }, offset: requested)
            decision = .proceed
        case 200..<300:
            // The whole body: the server ignored the range, or the file changed since.
            let total = TransferRules.expectedBodyLength(head, method: urlRequest.httpMethod)
            save(validator.map { PartialDownload.Record(key: partial.key, validator: $0, totalLength: total) }, offset: 0)
            decision = requested > 0 ? .writeFromStart : .proceed
        case 416:
            let total = Self.contentRange(of: head)?.total
            state.withLock { state in
                if requested > 0, total == requested { state.alreadyWhole = requested } else { state.restart = true }
            }
            return .fail(.httpStatus(ErrorResponse(head, body: Data())))
        default:
            // The partial file stays as it was (a 503 may pass); the error's body is not kept.
            let failure = ErrorResponse(head, body: Data())
            return .fail(head.statusCode == 401 ? .unauthorized(failure) : .httpStatus(failure))
        }
        if let own = callbacks.head?(head), case .fail = own { return own }
        return decision
    }

    /// Records what the bytes from `offset` on can be resumed with (or that they can't).
    private func save(_ record: PartialDownload.Record?, offset: Int64) {
        state.withLock { state in
            state.offset = offset
            state.record = resumes ? record : nil
        }
        if resumes, let record {
            try? partial.save(record)
        } else {
            partial.forgetRecord()
        }
    }

    private func transferEnded(_ result: Result<TransportResponse, NetworkError>) {
        let (alreadyWhole, restart, cancelled, record) = state.withLock { state -> (Int64?, Bool, Bool, PartialDownload.Record?) in
            let restart = state.restart && !state.restarted && !state.cancelled
            if restart { state.restarted = true }
            return (state.alreadyWhole, restart, state.cancelled, state.record)
        }
        if restart {
            partial.discard()
            start(fromZero: true)
            return
        }
        switch result {
        case .success(let response):
            let size = (try? FileManager.default.attributesOfItem(atPath: partial.file.path)[.size] as? NSNumber)?.int64Value ?? 0
            if let total = record?.totalLength, total != size {
                partial.discard()
                end(.failure(.transport(URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "the download ended at \(size) of \(total) bytes"]))))
                return
            }
            finish(head: response.httpResponse, size: size, bodyLength: response.bodyLength, timing: response.timing)
        case .failure(let error):
            if let whole = alreadyWhole, !cancelled, let url = urlRequest.url {
                // The partial file was the whole file (it was cut off right after its last byte).
                let head = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": String(whole)])!
                finish(head: head, size: whole, bodyLength: 0, timing: Timing(start: Date(), timeToFirstByte: nil, duration: 0))
                return
            }
            if !resumes || record == nil { partial.discard() }
            end(.failure(error))
        }
    }

    private func finish(head: HTTPURLResponse, size: Int64, bodyLength: Int64, timing: Timing) {
        do {
            try partial.complete()
        } catch {
            partial.discard()
            end(.failure(.transport(URLError(.cannotMoveFile, userInfo: [NSLocalizedDescriptionKey: "cannot move the download to \(partial.destination.path): \(error)"]))))
            return
        }
        // Progress ends exactly at the whole file.
        callbacks.progress?(TransferProgress(bytesSent: 0, expectedBytesToSend: 0, bytesReceived: size, expectedBytesToReceive: size))
        end(.success(TransportResponse(httpResponse: head, fileURL: partial.destination, bodyLength: bodyLength, timing: timing)))
    }

    private func end(_ result: Result<TransportResponse, NetworkError>) {
        partial.release()
        callbacks.completion(result)
    }

    /// The `ETag` (when strong) or else the `Last-Modified`: what `If-Range` may carry.
    static func validator(of head: HTTPURLResponse) -> String? {
        if let tag = head.value(forHTTPHeaderField: "ETag"), !tag.isEmpty, !tag.hasPrefix("W/") { return tag }
        if let date = head.value(forHTTPHeaderField: "Last-Modified"), !date.isEmpty { return date }
        return nil
    }

    /// `Content-Range: bytes start-end/total` (`total` may be `*`), or `bytes */total` for a 416.
    static func contentRange(of head: HTTPURLResponse) -> (start: Int64?, total: Int64?)? {
        guard let value = head.value(forHTTPHeaderField: "Content-Range")?.trimmingCharacters(in: .whitespaces),
            value.lowercased().hasPrefix("bytes ")
        else { return nil }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1).map(String.init)
        guard halves.count == 2 else { return nil }
        let total = halves[1] == "*" ? nil : Int64(halves[1])
        if halves[0] == "*" { return (nil, total) }
        let bounds = halves[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start <= end else { return nil }
        return (start, total)
    }
}

/// A transfer that failed before it started: its completion comes on a global queue (never from
/// inside `perform`).
private struct Failed: TransportTask {
    static func start(_ error: NetworkError, _ callbacks: TransferCallbacks) -> any TransportTask {
        DispatchQueue.global().async { callbacks.completion(.failure(error)) }
        return Failed()
    }

    func cancel() {}
}
