import Dispatch
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the session delegate knows about one transfer.
///
/// `@unchecked Sendable`: the `var`s below are touched only on the session's serial delegate queue
/// (every delegate callback runs there, and so does a cancel), and `finished` is an atomic.
final class TransferState: @unchecked Sendable {
    /// The request as it was given.
    let request: URLRequest
    let options: TransferOptions
    let progress: (@Sendable (TransferProgress) -> Void)?
    private let completion: @Sendable (Result<TransportResponse, NetworkError>) -> Void
    let startDate = Date()
    let startTime = DispatchTime.now().uptimeNanoseconds
    private let finished = Atomic<Bool>(false)
    /// The task moving the bytes now (a new one after a redirect Switchboard follows itself).
    private let task = Locked<URLSessionTask?>(nil)

    // Delegate-queue only:
    /// The request of the current hop (after redirects, the one the next hop is built from).
    var currentRequest: URLRequest
    var data = Data()
    var response: HTTPURLResponse? {
        didSet { lengthIsUnreliable = nil }
    }
    /// Whether the response's Content-Length says nothing of the bytes handed over: a content-encoded
    /// body (its length is the compressed size) or a transfer-encoded one (its framing wins, RFC 9112
    /// §6.3). Looked up at most once per response, and only when a size matters (a header lookup on
    /// Linux bridges and compares strings).
    private var lengthIsUnreliable: Bool?
    private var isLengthUnreliable: Bool {
        if let lengthIsUnreliable { return lengthIsUnreliable }
        let unreliable = response?.value(forHTTPHeaderField: "Content-Encoding") != nil
            || response?.value(forHTTPHeaderField: "Transfer-Encoding") != nil
        lengthIsUnreliable = unreliable
        return unreliable
    }
    var firstByteTime: UInt64?
    var bytesSent: Int64 = 0
    var expectedBytesToSend: Int64?
    /// A failure decided by the delegate before it cancelled the task (401, size limit); it wins over
    /// the `cancelled` error the task then completes with.
    var failure: NetworkError?
    /// Redirects followed so far.
    var redirectCount = 0
    /// Whether the request set its own `Cookie` header (then the jar's cookies are not added on redirects).
    lazy var setsOwnCookie: Bool = request.value(forHTTPHeaderField: "Cookie") != nil
    /// A redirect to follow with a new task when the current one completes.
    var pendingRedirect: URLRequest?

    init(
        request: URLRequest,
        options: TransferOptions,
        progress: (@Sendable (TransferProgress) -> Void)?,
        completion: @escaping @Sendable (Result<TransportResponse, NetworkError>) -> Void
    ) {
        self.request = request
        currentRequest = request
        self.options = options
        self.progress = progress
        self.completion = completion
    }

    /// The task moving the bytes now.
    var currentTask: URLSessionTask? {
        get { task.withLock { $0 } }
        set { task.withLock { $0 = newValue } }
    }

    /// Cancels the current task.
    func cancelTask() {
        currentTask?.cancel()
    }

    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// Ends the transfer with `result` unless it already ended. Returns whether this call ended it.
    @discardableResult
    func finish(_ result: Result<TransportResponse, NetworkError>) -> Bool {
        guard finished.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return false
        }
        completion(result)
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

    /// Whether the response can have no body whatever its headers say: a HEAD request, 1xx, 204, 304.
    var hasNoBody: Bool {
        guard let response else { return false }
        let status = response.statusCode
        return currentRequest.httpMethod == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304
    }

    /// The expected body size, when the response says and the body isn't compressed (a compressed
    /// body's Content-Length is its compressed size; URLSession hands over the decoded bytes).
    var expectedBytesToReceive: Int64? {
        guard let response, !hasNoBody, response.expectedContentLength >= 0, !isLengthUnreliable else { return nil }
        return response.expectedContentLength
    }

    func progressSnapshot() -> TransferProgress {
        TransferProgress(
            bytesSent: bytesSent,
            expectedBytesToSend: expectedBytesToSend,
            bytesReceived: Int64(data.count),
            expectedBytesToReceive: expectedBytesToReceive
        )
    }
}
