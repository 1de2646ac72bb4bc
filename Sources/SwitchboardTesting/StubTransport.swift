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

    /// Answers from the handler, on the stub's serial queue, applying ``TransferRules`` as a network
    /// transport does: a `3xx` answer with a `Location` is followed (the handler sees the next hop), a
    /// `401` with a Basic challenge is answered once with the options' credentials, the size limit and
    /// the head callback apply, and a file destination is written. The handler sees the body in
    /// `httpBody`, whatever its kind.
    public func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let task = StubTask(queue: queue, completion: callbacks.completion)
        let first: URLRequest
        do {
            first = try Self.materialize(request, rules: TransferRules(options))
        } catch {
            queue.async { task.finish(.failure(error)) }
            return task
        }
        recorded.withLock { $0.append(first) }
        let outcome = handler(first)
        let delay: TimeInterval = (try? outcome.get().delay) ?? 0
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            guard !task.isFinished else { return }
            task.finish(answer(request, first: (first, outcome), options: options, callbacks: callbacks))
        }
        return task
    }

    /// Runs the hops of one transfer on the stub's queue.
    private func answer(
        _ request: TransportRequest,
        first: (request: URLRequest, outcome: Result<Answer, NetworkError>),
        options: TransferOptions,
        callbacks: TransferCallbacks
    ) -> Result<TransportResponse, NetworkError> {
        let rules = TransferRules(options)
        let start = Date()
        var current = first.request
        var outcome = first.outcome
        var redirects = 0
        var challenged = 0
        while true {
            let answer: Answer
            switch outcome {
            case .failure(let error): return .failure(error)
            case .success(let value): answer = value
            }
            guard let url = current.url,
                let head = HTTPURLResponse(url: url, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: answer.headers)
            else { return .failure(.invalidRequest(reason: "stub: request has no URL")) }
            var next: URLRequest?
            if (300..<400).contains(answer.status), let location = head.value(forHTTPHeaderField: "Location") {
                switch rules.redirect(from: current, response: head, to: URL(string: location, relativeTo: url)?.absoluteURL, followed: redirects) {
                case .deliver: break
                case .fail(let error): return .failure(error)
                case .follow(let request):
                    redirects += 1
                    next = request
                }
            } else if answer.status == 401, head.value(forHTTPHeaderField: "WWW-Authenticate")?.lowercased().hasPrefix("basic") == true {
                let decision = rules.answerChallenge(
                    original: first.request, current: current, host: url.host ?? "", port: url.port ?? (url.scheme == "https" ? 443 : 80),
                    previousFailures: challenged, response: head
                )
                switch decision {
                case .fail(let error): return .failure(error)
                case .answer(let credentials):
                    challenged += 1
                    var retry = current
                    retry.setValue(credentials.authorizationHeader, forHTTPHeaderField: "Authorization")
                    next = retry
                }
            }
            if let next {
                recorded.withLock { $0.append(next) }
                current = next
                outcome = handler(next)
                continue
            }
            if let refused = rules.admit(head, for: current, destination: request.destination) { return .failure(refused) }
            var fromStart = false
            switch callbacks.head?(head) ?? .proceed {
            case .fail(let error): return .failure(error)
            case .proceed: break
            case .writeFromStart: fromStart = true
            }
            let timing = Timing(start: start, timeToFirstByte: 0, duration: Date().timeIntervalSince(start))
            let length = Int64(answer.body.count)
            // A Content-Length longer than the body stands for a server that closed mid-body; what
            // arrived is in the destination file first, as a network transport leaves it.
            if let cut = rules.verifyComplete(head, for: current, receivedBytes: length) {
                if case .file(let fileURL, let offset) = request.destination, let handle = try? DestinationFile.open(fileURL, at: fromStart ? 0 : offset) {
                    try? handle.write(contentsOf: answer.body)
                    try? handle.close()
                }
                return .failure(cut)
            }
            if let sent = request.body.length, sent > 0, callbacks.progress != nil {
                callbacks.progress?(TransferProgress(bytesSent: sent, expectedBytesToSend: sent))
            }
            switch request.destination {
            case .memory:
                if let tooLarge = rules.admit(receivedBytes: length) { return .failure(tooLarge) }
                callbacks.progress?(TransferProgress(bytesSent: request.body.length ?? 0, expectedBytesToSend: request.body.length, bytesReceived: length, expectedBytesToReceive: length))
                return .success(TransportResponse(httpResponse: head, data: answer.body, timing: timing))
            case .file(let fileURL, let offset):
                do {
                    let handle = try DestinationFile.open(fileURL, at: fromStart ? 0 : offset)
                    defer { try? handle.close() }
                    try handle.write(contentsOf: answer.body)
                } catch let error as NetworkError {
                    return .failure(error)
                } catch {
                    return .failure(.transport(URLError(.cannotWriteToFile, userInfo: [NSLocalizedDescriptionKey: "stub: \(error)"])))
                }
                callbacks.progress?(TransferProgress(bytesSent: request.body.length ?? 0, expectedBytesToSend: request.body.length, bytesReceived: length, expectedBytesToReceive: length))
                return .success(TransportResponse(httpResponse: head, fileURL: fileURL, bodyLength: length, timing: timing))
            }
        }
    }

    /// The request with its body in `httpBody`, as the handler sees it.
    private static func materialize(_ request: TransportRequest, rules: TransferRules) throws(NetworkError) -> URLRequest {
        var urlRequest = request.urlRequest
        if let invalid = rules.check(request.body) { throw invalid }
        switch request.body {
        case .none: break
        case .data(let data): urlRequest.httpBody = data
        case .file(let url):
            do {
                urlRequest.httpBody = try Data(contentsOf: url)
            } catch {
                throw .invalidRequest(reason: "the body file \(url.path) could not be read: \(error)")
            }
        case .stream(_, let open):
            let stream: InputStream
            do {
                stream = try open()
            } catch {
                throw .invalidRequest(reason: "the body stream could not be opened: \(error)")
            }
            var data = Data()
            stream.open()
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count <= 0 { break }
                data.append(buffer, count: count)
            }
            stream.close()
            urlRequest.httpBody = data
        }
        return urlRequest
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

    var isFinished: Bool { completion.withLock { $0 == nil } }

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
