import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Canned answers by request type, URL pattern or predicate. The newest rule that matches answers, so
/// a test can override a default set up earlier.
extension StubTransport {
    /// Answers every request of type `R` with `answer`.
    ///
    /// ```swift
    /// stub.on(GetUserInfo.self, answer: .json(["user": ["name": "Ada"]]))
    /// ```
    @discardableResult
    public func on<R: Request>(_ type: R.Type, answer: Answer) -> StubTransport {
        on(type, answers: [answer])
    }

    /// Answers the requests of type `R` with `answers` in turn, the last one again once they run out:
    /// a retry sequence (`[.status(503), .status(503), .json(…)]`). Every transfer takes the next one,
    /// a redirect's or a challenge's next hop included.
    @discardableResult
    public func on<R: Request>(_ type: R.Type, answers: [Answer]) -> StubTransport {
        add(Rule(matches: { _, origin in origin is R }, responder: .sequence(answers)))
    }

    /// Answers the requests of type `R` with what `handler` returns for each: the request value and the
    /// `URLRequest` as it left the pipeline. `handler` runs on the thread that sent the request.
    ///
    /// ```swift
    /// stub.on(GetUserInfo.self) { request, _ in .json(["user": ["id": .string(request.id)]]) }
    /// ```
    @discardableResult
    public func on<R: Request>(_ type: R.Type, answering handler: @escaping @Sendable (R, URLRequest) -> Answer) -> StubTransport {
        add(
            Rule(
                matches: { _, origin in origin is R },
                responder: .handler { urlRequest, origin in
                    // The rule matched only requests of type `R`.
                    guard let request = origin as? R else { return .failure(.invalidRequest(reason: "StubTransport: no \(R.self) to answer")) }
                    return handler(request, urlRequest)
                }))
    }

    /// Answers the requests whose URL matches `pattern` (and whose method is `method`, when given) with
    /// `answers` in turn, the last one again once they run out.
    ///
    /// The pattern is a glob: `*` stands for any characters but `/`, `**` for any characters. A pattern
    /// with a scheme (`https://api.test/users/*`) is matched against the whole URL, query included;
    /// any other (`/users/*`) against the path alone.
    @discardableResult
    public func on(_ pattern: String, method: HTTPMethod? = nil, answers: [Answer]) -> StubTransport {
        let glob = URLGlob(pattern)
        return add(
            Rule(
                matches: { urlRequest, _ in
                    if let method, urlRequest.httpMethod?.uppercased() != method.rawValue { return false }
                    return urlRequest.url.map(glob.matches) ?? false
                }, responder: .sequence(answers)))
    }

    /// Answers the requests whose URL matches `pattern` (see ``on(_:method:answers:)``) with `answer`.
    @discardableResult
    public func on(_ pattern: String, method: HTTPMethod? = nil, answer: Answer) -> StubTransport {
        on(pattern, method: method, answers: [answer])
    }

    /// Answers the requests `predicate` accepts with `answers` in turn. `predicate` runs on the thread
    /// that sent the request.
    @discardableResult
    public func on(matching predicate: @escaping @Sendable (URLRequest) -> Bool, answers: [Answer]) -> StubTransport {
        add(Rule(matches: { urlRequest, _ in predicate(urlRequest) }, responder: .sequence(answers)))
    }

    /// Removes every rule (the fallback stays) and forgets the recorded requests.
    public func reset() {
        rules.withLock { $0 = [] }
        recordedRequests.withLock { $0 = [] }
    }
}

/// One stub rule: which requests it answers, and how.
struct Rule: Sendable {
    enum Responder: Sendable {
        /// Answers in turn; the last repeats.
        case sequence([StubTransport.Answer])
        /// Answers computed per request (user code: called outside every lock).
        case handler(@Sendable (URLRequest, (any Request)?) -> StubTransport.Answer)
    }

    let matches: @Sendable (URLRequest, (any Request)?) -> Bool
    let responder: Responder
    /// For a sequence: how many answers were taken.
    var used = 0
}

/// A URL glob: `*` any characters but `/`, `**` any characters.
struct URLGlob: Sendable {
    private let pattern: [Character]
    private let wholeURL: Bool

    init(_ pattern: String) {
        self.pattern = Array(pattern)
        wholeURL = pattern.contains("://")
    }

    func matches(_ url: URL) -> Bool {
        let subject = wholeURL ? url.absoluteString : (url.path.isEmpty ? "/" : url.path)
        return Self.match(pattern[...], Array(subject)[...])
    }

    private static func match(_ pattern: ArraySlice<Character>, _ text: ArraySlice<Character>) -> Bool {
        guard let first = pattern.first else { return text.isEmpty }
        guard first == "*" else {
            guard let head = text.first, head == first else { return false }
            return match(pattern.dropFirst(), text.dropFirst())
        }
        let crossesSlashes = pattern.dropFirst().first == "*"
        let rest = pattern.dropFirst(crossesSlashes ? 2 : 1)
        var remaining = text
        while true {
            if match(rest, remaining) { return true }
            guard let next = remaining.first, crossesSlashes || next != "/" else { return false }
            remaining = remaining.dropFirst()
        }
    }
}
