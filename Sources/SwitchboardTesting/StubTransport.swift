import Dispatch
import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``Transport`` that answers from canned responses instead of the network, for testing app code
/// (observers, view models) without a server.
///
/// ```swift
/// let stub = StubTransport { request in
///     request.url?.path == "/users/1" ? .json(["user": ["name": "Ada"]]) : .status(404)
/// }
/// let client = Dispatcher(configuration: Configuration { $0.baseURL = URL(string: "https://api.test") },
///                          transport: stub)
/// ```
/// Answers are delivered asynchronously on the stub's own serial queue, after `delay` if one is set.
public final class StubTransport: Transport {
    /// A canned answer.
    public struct Answer: Sendable {
        /// The status code.
        public var status: Int
        /// The response headers.
        public var headers: [String: String]
        /// The body.
        public var body: Data
        /// How long to wait before answering.
        public var delay: TimeInterval

        /// Creates an answer.
        public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data(), delay: TimeInterval = 0) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
        }

        /// A JSON answer (`Content-Type: application/json`).
        public static func json(_ value: JSON, status: Int = 200) -> Answer {
            Answer(status: status, headers: ["Content-Type": "application/json"], body: value.serialized())
        }

        /// An empty answer with a status code.
        public static func status(_ code: Int) -> Answer { Answer(status: code) }
    }

    private let handler: @Sendable (URLRequest) -> Result<Answer, NetworkError>
    private let queue = DispatchQueue(label: "switchboard.stub-transport")
    private let recorded = Locked<[URLRequest]>([])

    /// Creates a stub that answers every request with `handler`'s answer or error.
    public init(_ handler: @escaping @Sendable (URLRequest) -> Answer) {
        self.handler = { .success(handler($0)) }
    }

    /// Creates a stub whose handler may also fail a request with a ``NetworkError``.
    public init(failing handler: @escaping @Sendable (URLRequest) -> Result<Answer, NetworkError>) {
        self.handler = handler
    }

    /// The requests performed so far, in order.
    public var requests: [URLRequest] { recorded.withLock { $0 } }

    /// Answers from the handler, on the stub's serial queue.
    public func perform(
        _ request: URLRequest,
        options: TransferOptions,
        progress: (@Sendable (TransferProgress) -> Void)?,
        completion: @escaping @Sendable (Result<TransportResponse, NetworkError>) -> Void
    ) -> any TransportTask {
        recorded.withLock { $0.append(request) }
        let task = StubTask(queue: queue, completion: completion)
        let outcome = handler(request)
        let delay: TimeInterval = (try? outcome.get().delay) ?? 0
        queue.asyncAfter(deadline: .now() + delay) {
            let start = Date()
            task.finish(
                outcome.flatMap { answer in
                    guard let url = request.url,
                        let response = HTTPURLResponse(url: url, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: answer.headers)
                    else { return .failure(.invalidRequest(reason: "stub: request has no URL")) }
                    progress?(TransferProgress(bytesReceived: Int64(answer.body.count), expectedBytesToReceive: Int64(answer.body.count)))
                    return .success(TransportResponse(httpResponse: response, data: answer.body, timing: Timing(start: start, timeToFirstByte: 0, duration: 0)))
                }
            )
        }
        return task
    }
}

/// A stubbed transfer: completes once, by answer or by cancel.
private final class StubTask: TransportTask {
    private let completion: Locked<(@Sendable (Result<TransportResponse, NetworkError>) -> Void)?>
    private let queue: DispatchQueue

    init(queue: DispatchQueue, completion: @escaping @Sendable (Result<TransportResponse, NetworkError>) -> Void) {
        self.queue = queue
        self.completion = Locked(completion)
    }

    func finish(_ result: Result<TransportResponse, NetworkError>) {
        let completion = completion.withLock { stored in
            defer { stored = nil }
            return stored
        }
        completion?(result)
    }

    /// Completes with `cancelled` on the stub's queue, so it is ordered after any callback there.
    func cancel() { queue.async { self.finish(.failure(.cancelled)) } }
}
