import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the session delegate knows about one transfer.
///
/// `@unchecked Sendable`: the `var`s below are touched on the session's serial delegate queue (every
/// delegate callback runs there, and so does a cancel), except the first hop's, set on the sender's
/// thread before the task is registered under the delegate's lock and resumed (which orders them
/// before any callback); `finished` is an atomic flag and `task` is behind the lock wrapper.
final class TransferState: @unchecked Sendable {
    /// The request as it was given.
    let request: TransportRequest
    let options: TransferOptions
    let rules: TransferRules
    let callbacks: TransferCallbacks
    let startDate = Date()
    let startTime = DispatchTime.now().uptimeNanoseconds
    private let finished = AtomicFlag()
    /// The task moving the bytes now (a new one after a redirect Switchboard follows itself).
    /// Locked: set on the sender's thread for the first hop and on the delegate queue for a redirect's; read there to cancel.
    private let task = Locked<URLSessionTask?>(nil)

    // Delegate-queue only:
    /// The request of the current hop (after redirects, the one the next hop is built from).
    var currentRequest: URLRequest
    /// The body of the current hop: the request's, or none after a redirect that turned it into a GET.
    var currentBody: TransferBody
    /// The bytes received into memory.
    var data = Data()
    /// The body bytes received in the current response (to memory or to the file).
    var bytesReceived: Int64 = 0
    var response: HTTPURLResponse? {
        didSet { expectedLength = nil }
    }
    /// The current response's expected body length, looked up at most once per response, and only when
    /// a size matters (a header lookup on Linux bridges and compares strings).
    private var expectedLength: Int64??
    /// Whether the current response is a 401 that a challenge may yet replace: its head is reported
    /// (and its body written to a file) only when the transfer ends with it.
    var isProvisional = false
    /// The open destination file, from the final head on.
    var file: FileHandle?
    /// Bytes received for the file and not yet written: they go in pieces of about 1 MiB (a write for
    /// each 16 KiB chunk would cost a system call each), and all of them before the completion.
    private var unwritten = Data()
    var firstByteTime: UInt64?
    var bytesSent: Int64 = 0
    var expectedBytesToSend: Int64?
    /// A failure decided by the delegate before it cancelled the task (401, size limit); it wins over
    /// the `cancelled` error the task then completes with.
    var failure: NetworkError?
    /// Redirects followed so far.
    var redirectCount = 0
    /// The session the current task belongs to.
    var session: URLSession?
    /// A redirect to follow with a new task when the current one completes.
    var pendingRedirect: (request: URLRequest, body: TransferBody)?

    init(request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) {
        self.request = request
        currentRequest = request.urlRequest
        currentBody = request.body
        self.options = options
        rules = TransferRules(options)
        self.callbacks = callbacks
        expectedBytesToSend = request.body.length
    }

    /// The task moving the bytes now.
    var currentTask: URLSessionTask? {
        get { task.withLock { $0 } }
        set { task.withLock { $0 = newValue } }
    }

    /// Cancels the current task; called on the delegate queue (see ``SessionDelegate/cancel(_:in:)``).
    func cancelTask() {
        if let task = currentTask, let session { SessionDelegate.cancel(task, in: session) }
    }

    var isFinished: Bool { finished.isSet }

    /// Ends the transfer with `result` unless it already ended. Returns whether this call ended it.
    @discardableResult
    func finish(_ result: Result<TransportResponse, NetworkError>) -> Bool {
        guard finished.testAndSet() else { return false }
        var result = result
        if let file {
            // What arrived is in the file before anyone hears of the end (a failed download resumes from it).
            if let failure = writeUnwritten(), case .success = result { result = .failure(failure) }
            try? file.close()
            self.file = nil
        }
        callbacks.completion(result)
        return true
    }

    /// The timing as of now.
    func timing() -> Timing {
        let now = DispatchTime.now().uptimeNanoseconds
        return Timing(
            start: startDate,
            timeToFirstByte: firstByteTime.map { Double($0 &- startTime) / 1e9 },
            duration: Double(now &- startTime) / 1e9
        )
    }

    /// The expected body size, when the response says and the body isn't compressed.
    var expectedBytesToReceive: Int64? {
        if let expectedLength { return expectedLength }
        guard let response else { return nil }
        let length = TransferRules.expectedBodyLength(response, method: currentRequest.httpMethod)
        expectedLength = .some(length)
        return length
    }

    func progressSnapshot() -> TransferProgress {
        TransferProgress(
            bytesSent: bytesSent,
            expectedBytesToSend: expectedBytesToSend,
            bytesReceived: bytesReceived,
            expectedBytesToReceive: expectedBytesToReceive
        )
    }

    // MARK: Destination

    /// Reports the final head and prepares the destination. Returns the error that ends the transfer
    /// instead, if any.
    func acceptHead(_ head: HTTPURLResponse) -> NetworkError? {
        if let refused = rules.admit(head, for: currentRequest, destination: request.destination) { return refused }
        let decision = callbacks.head?(head) ?? .proceed
        switch decision {
        case .fail(let error): return error
        case .proceed: return openDestination(fromStart: false)
        case .writeFromStart: return openDestination(fromStart: true)
        }
    }

    private func openDestination(fromStart: Bool) -> NetworkError? {
        guard case .file(let url, let offset) = request.destination else { return nil }
        do {
            file = try DestinationFile.open(url, at: fromStart ? 0 : offset)
            unwritten = Data()
            return nil
        } catch {
            return error
        }
    }

    /// Stores received bytes in the destination. Returns the error that ends the transfer, if any.
    func receive(_ chunk: Data) -> NetworkError? {
        if file != nil {
            unwritten.append(chunk)
            if unwritten.count >= 1 << 20, let failure = writeUnwritten() { return failure }
        } else {
            if let tooLarge = rules.admit(receivedBytes: Int64(data.count + chunk.count)) { return tooLarge }
            data.append(chunk)
        }
        bytesReceived += Int64(chunk.count)
        return nil
    }

    /// Writes the bytes received for the file so far; returns the error that ends the transfer, if any.
    /// Set when a write to the destination file failed: nothing more is written to it.
    private var writeFailed = false

    private func writeUnwritten() -> NetworkError? {
        guard let file, !unwritten.isEmpty else { return nil }
        // Written once, whatever happens, and nothing after a failed write: the file holds a prefix of
        // the body (a resume reads its offset from it); the same bytes again, or later ones after a
        // gap, would corrupt it.
        defer { unwritten.removeAll(keepingCapacity: true) }
        guard !writeFailed else { return nil }
        do {
            try file.write(contentsOf: unwritten)
            return nil
        } catch {
            writeFailed = true
            return .transport(URLError(.cannotWriteToFile, userInfo: [NSLocalizedDescriptionKey: "cannot write the body: \(error)", NSUnderlyingErrorKey: error]))
        }
    }

    /// The transfer's response, once the final body arrived.
    func transportResponse(_ head: HTTPURLResponse) -> TransportResponse {
        if case .file(let url, _) = request.destination {
            return TransportResponse(httpResponse: head, fileURL: url, bodyLength: bytesReceived, timing: timing())
        }
        return TransportResponse(httpResponse: head, data: data, timing: timing())
    }
}
