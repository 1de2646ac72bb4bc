import Dispatch
import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``Transport`` that answers from canned responses instead of the network, for testing app code
/// (observers, view models, screens) without a server.
///
/// ```swift
/// let stub = StubTransport()
/// stub.on(GetUserInfo.self, answer: .json(["user": ["name": "Ada"]]))
/// stub.on("/avatars/*", answers: [.status(503), .data(png, contentType: "image/png")])   // a retry, then success
/// let client = Dispatcher.stubbed(stub)        // a dispatcher of the test's own
/// ```
/// Rules answer by request type, URL pattern or predicate; the newest rule that matches wins. A request
/// no rule matches goes to the fallback handler given to `init`, or fails with
/// ``NetworkError/invalidRequest(reason:)`` naming it. Every request is recorded (``recorded``).
///
/// Answers are delivered asynchronously on the stub's own serial queue, after their `delay`. Redirects,
/// Basic challenges, size limits and file destinations follow ``TransferRules``, as on the network.
public final class StubTransport: Transport {
    private let fallback: (@Sendable (URLRequest) -> Result<Answer, NetworkError>)?
    private let queue = DispatchQueue(label: "switchboard.stub-transport")
    let rules = Locked<[(id: Int, rule: Rule)]>([])
    private let nextRuleID = Locked(0)
    /// Answers scheduled on `queue` that have not run yet (a cancelled one counts until its time).
    private let pending = Locked(0)

    /// How many answers are still to run on the stub's queue (a cancelled transfer's included, until
    /// its delay has passed): once none are, the stub calls nothing back. For the package's tests.
    package var pendingAnswers: Int { pending.withLock { $0 } }
    let recordedRequests = Locked<[Recorded]>([])

    /// Creates a stub with no rules: add them with `on(…)`. A request no rule answers fails with
    /// ``NetworkError/invalidRequest(reason:)``.
    public init() {
        fallback = nil
    }

    /// Creates a stub that answers every request no rule matches with `handler`'s answer.
    public init(_ handler: @escaping @Sendable (URLRequest) -> Answer) {
        fallback = { .success(handler($0)) }
    }

    /// Creates a stub whose fallback handler may also fail a request with a ``NetworkError``.
    public init(failing handler: @escaping @Sendable (URLRequest) -> Result<Answer, NetworkError>) {
        fallback = handler
    }

    /// ``TransportCookies/none``: the stub puts no cookies on requests (so the response cache works
    /// with it as with a real transport).
    public var addedCookies: TransportCookies { .none }

    /// Always: a stub answers in memory, with no connection for a trust policy or a proxy to apply to.
    public func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool { true }

    /// The requests performed so far, in order (each hop of a redirect or challenge counts).
    public var requests: [URLRequest] { recordedRequests.withLock { $0.map(\.urlRequest) } }

    /// The requests performed so far, with the Switchboard requests they came from.
    public var recorded: [Recorded] { recordedRequests.withLock { $0 } }

    /// The recorded requests that came from requests of type `R`.
    public func recorded<R: Request>(of type: R.Type) -> [Recorded] {
        recorded.filter { $0.origin is R }
    }

    func add(_ rule: Rule) -> StubTransport {
        let id = nextRuleID.withLock {
            $0 += 1; return $0
        }
        rules.withLock { $0.append((id, rule)) }
        return self
    }

    /// The answer for one request: the newest matching rule's, else the fallback's. Matchers and
    /// handlers (user code) run outside every lock.
    private func answer(for urlRequest: URLRequest, origin: (any Request)?) -> Answer {
        recordedRequests.withLock { $0.append(Recorded(urlRequest: urlRequest, origin: origin, date: Date())) }
        let snapshot = rules.withLock { $0 }
        for (id, rule) in snapshot.reversed() where rule.matches(urlRequest, origin) {
            switch rule.responder {
            case .handler(let handler):
                return handler(urlRequest, origin)
            case .sequence(let answers):
                guard let last = answers.last else { return .failure(.invalidRequest(reason: "StubTransport: a rule with no answers")) }
                let taken = rules.withLock { rules -> Int in
                    guard let index = rules.firstIndex(where: { $0.id == id }) else { return 0 }
                    defer { rules[index].rule.used += 1 }
                    return rules[index].rule.used
                }
                return taken < answers.count ? answers[taken] : last
            }
        }
        if let fallback {
            switch fallback(urlRequest) {
            case .success(let answer): return answer
            case .failure(let error): return .failure(error)
            }
        }
        return .failure(.invalidRequest(reason: "StubTransport has no answer for \(urlRequest.httpMethod ?? "GET") \(urlRequest.url?.absoluteString ?? "(no URL)")"))
    }

    private static func result(_ answer: Answer) -> Result<Answer, NetworkError> {
        if let failure = answer.failure { return .failure(failure) }
        return .success(answer)
    }

    /// Answers from the rules, on the stub's serial queue, applying ``TransferRules`` as a network
    /// transport does: a `3xx` answer with a `Location` is followed (the handler sees the next hop), a
    /// `401` with a Basic challenge is answered once with the options' credentials, the size limit and
    /// the head callback apply, and a file destination is written. Rules and handlers see the body in
    /// `httpBody`, whatever its kind.
    public func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let task = StubTask(queue: queue, completion: callbacks.completion)
        pending.withLock { $0 += 1 }
        let first: URLRequest
        do {
            first = try Self.materialize(request, rules: TransferRules(options))
        } catch {
            queue.async { [pending] in
                task.finish(.failure(error))
                pending.withLock { $0 -= 1 }
            }
            return task
        }
        let canned = answer(for: first, origin: request.origin)
        let outcome = Self.result(canned)
        let delay = canned.delay
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            defer { pending.withLock { $0 -= 1 } }
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
                current = next
                outcome = Self.result(self.answer(for: next, origin: request.origin))
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
                callbacks.progress?(
                    TransferProgress(bytesSent: request.body.length ?? 0, expectedBytesToSend: request.body.length, bytesReceived: length, expectedBytesToReceive: length))
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
                callbacks.progress?(
                    TransferProgress(bytesSent: request.body.length ?? 0, expectedBytesToSend: request.body.length, bytesReceived: length, expectedBytesToReceive: length))
                return .success(TransportResponse(httpResponse: head, fileURL: fileURL, bodyLength: length, timing: timing))
            }
        }
    }

    /// The request with its body in `httpBody`, as the handler sees it.
    private static func materialize(_ request: TransportRequest, rules: TransferRules) throws(NetworkError) -> URLRequest {
        var urlRequest = request.urlRequest
        if let invalid = rules.check(url: request.urlRequest.url) ?? rules.check(request.body) { throw invalid }
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
            let stream = try TransferBody.openStream(open)
            var data = Data()
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
