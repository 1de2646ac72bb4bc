import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The rules every transport applies the same way, so that a transport only moves bytes: which
/// redirects to follow and how each hop is built, how a `401` challenge is answered, and how large a
/// body may be. ``URLSessionTransport`` consults them from its session delegate; a transport of your
/// own creates one per transfer from its ``TransferOptions`` and asks it at the same points:
///
/// | When | Ask |
/// |---|---|
/// | before sending a body | ``check(_:)`` |
/// | a `3xx` with a `Location` arrives | ``redirect(from:response:to:followed:)`` |
/// | a `401` with a `WWW-Authenticate: Basic` challenge arrives | ``answerChallenge(original:current:host:port:previousFailures:response:)`` |
/// | the final response head arrives | ``admit(_:for:destination:)`` |
/// | body bytes arrive (to memory) | ``admit(receivedBytes:)`` |
/// | the connection ends | ``verifyComplete(_:for:receivedBytes:)`` |
///
/// The deadline of each attempt is kept above the transport, by the ``Dispatcher``, which tells the
/// transport to stop (``TransportTask/cancel()``) when it passes.
public struct TransferRules: Sendable {
    /// The settings the rules apply.
    public let options: TransferOptions

    /// Creates the rules of one transfer.
    public init(_ options: TransferOptions) {
        self.options = options
    }

    // MARK: Redirects

    /// What to do with a redirect response.
    public enum RedirectDecision: Sendable {
        /// Send this request next (built from the current hop: 301/302 POST and 303 become GET without a body, 307/308 keep method and body, a cross-origin hop loses the credential headers).
        case follow(URLRequest)
        /// Don't follow: the `3xx` response is the transfer's answer (``RedirectRules/none``).
        case deliver
        /// Stop with this error: too many redirects, or a scheme that is not allowed.
        case fail(NetworkError)
    }

    /// Decides a redirect.
    /// - Parameters:
    ///   - current: the request of the hop that got the redirect.
    ///   - response: the `3xx` response.
    ///   - location: where it points, resolved against the current URL (`nil`: no usable `Location`).
    ///   - followed: redirects already followed in this transfer.
    public func redirect(from current: URLRequest, response: HTTPURLResponse, to location: URL?, followed: Int) -> RedirectDecision {
        let rules = options.redirects
        if rules.maximumCount == 0 { return .deliver }
        guard let location else { return .deliver }
        if followed + 1 > rules.maximumCount { return .fail(.transport(URLError(.httpTooManyRedirects))) }
        // Only the allowed schemes (http and https by default). The scheme is read from the raw
        // Location as well: FoundationNetworking resolves `file:` or `data:` against the current URL.
        let raw = response.value(forHTTPHeaderField: "Location").flatMap(URLResolver.scheme(of:))?.lowercased()
        let scheme = raw ?? location.scheme?.lowercased() ?? ""
        if !rules.allowedSchemes.contains(scheme) || !["http", "https"].contains(scheme) {
            return .fail(
                .transport(
                    URLError(
                        .unsupportedURL,
                        userInfo: [
                            NSLocalizedDescriptionKey: "redirect to a \(scheme): URL refused (followed: \(rules.allowedSchemes.sorted().joined(separator: ", ")))"
                        ])))
        }
        // A redirect's own head is checked as a final one is (a transport that follows redirects
        // itself sees it only here), and so is the port it points to.
        if let problem = ResponseFraming.problem(in: response) { return .fail(.malformedResponse(reason: problem)) }
        if let problem = URLResolver.portProblem(location) { return .fail(.malformedResponse(reason: "the redirect's Location: " + problem)) }
        return .follow(RedirectPolicy.next(after: current, status: response.statusCode, to: location))
    }

    // MARK: Challenges

    /// How to answer an authentication challenge.
    public enum ChallengeDecision: Sendable {
        /// Answer with these credentials (sent once).
        case answer(Credentials)
        /// Give up: the transfer fails with this error (``NetworkError/unauthorized(_:)``).
        case fail(NetworkError)
    }

    /// Decides how to answer a Basic challenge: with ``TransferOptions/credentials``, once, only when
    /// they weren't already sent pre-emptively (a challenge then means they were wrong), and only to the
    /// original request's own origin (never to a host it was redirected to).
    /// - Parameters:
    ///   - original: the request as the transfer started.
    ///   - current: the request of the hop that was challenged.
    ///   - host: the challenging host.
    ///   - port: its port.
    ///   - previousFailures: how many times this challenge was already answered.
    ///   - response: the `401` (or `407`) response, when known.
    public func answerChallenge(
        original: URLRequest,
        current: URLRequest,
        host: String,
        port: Int,
        previousFailures: Int,
        response: HTTPURLResponse?
    ) -> ChallengeDecision {
        let alreadySent = current.value(forHTTPHeaderField: "Authorization") != nil
        let sameOrigin =
            RedirectPolicy.isOrigin(of: original.url, host: host, port: port)
            && RedirectPolicy.sameOrigin(original.url, current.url)
        if let credentials = options.credentials, previousFailures == 0, !alreadySent, sameOrigin {
            return .answer(credentials)
        }
        return .fail(
            .unauthorized(
                ErrorResponse(
                    statusCode: response?.statusCode ?? 401,
                    headers: response.map(HTTPHeaders.init) ?? HTTPHeaders(),
                    body: Data(),
                    url: response?.url ?? current.url ?? original.url
                )))
    }

    // MARK: Bodies

    /// Checks a request's URL before anything is sent: there is one (a `URLRequest` whose `url` was set
    /// to `nil` crashes FoundationNetworking when it is copied), and its port, if it has one, is in
    /// 1–65535 (Foundation's `URL` takes `:99999`, and libcurl would report it only after trying).
    /// Returns ``NetworkError/invalidRequest(reason:)``, or `nil`.
    public func check(url: URL?) -> NetworkError? {
        guard let url else { return .invalidRequest(reason: "the request has no URL") }
        return URLResolver.portProblem(url).map { .invalidRequest(reason: $0) }
    }

    /// Checks a body before it is sent with `method`: a `GET` or `HEAD` carries none (URLSession refuses
    /// one, on every platform; libcurl would send a GET's and wait for a HEAD's answer body), and a file
    /// must be a readable regular file. Returns ``NetworkError/invalidRequest(reason:)`` before anything is
    /// sent, or `nil`.
    public func check(_ body: TransferBody, method: String?) -> NetworkError? {
        let name = (method ?? "GET").uppercased()
        if !body.isEmpty, name == "GET" || name == "HEAD" {
            return .invalidRequest(reason: "a \(name) request can't carry a body; send it with POST or PUT, or as query parameters")
        }
        return check(body)
    }

    /// Checks a body before it is sent: a file must be a readable regular file. Returns the error that
    /// fails the transfer (``NetworkError/invalidRequest(reason:)``) before anything is sent, or `nil`.
    public func check(_ body: TransferBody) -> NetworkError? {
        guard case .file(let url) = body else { return nil }
        var isDirectory: ObjCBool = false
        guard url.isFileURL, FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            FileManager.default.isReadableFile(atPath: url.path)
        else {
            return .invalidRequest(reason: "the body file \(url.path) is not a readable file")
        }
        return nil
    }

    // MARK: Size

    /// Checks a final response head: a body to memory whose `Content-Length` is over
    /// ``TransferOptions/maximumResponseSize`` fails with ``NetworkError/responseTooLarge(limit:)``
    /// before a byte of it is read. Returns `nil` when the transfer may go on.
    public func admit(_ head: HTTPURLResponse, for request: URLRequest, destination: ResponseDestination) -> NetworkError? {
        admit(ResponseHead(head), for: request, destination: destination)
    }

    func admit(_ head: ResponseHead, for request: URLRequest, destination: ResponseDestination) -> NetworkError? {
        guard case .memory = destination, !Self.hasNoBody(status: head.statusCode, method: request.httpMethod) else { return nil }
        let limit = options.maximumResponseSize
        return head.expectedContentLength > Int64(limit) ? .responseTooLarge(limit: limit) : nil
    }

    /// Checks the body bytes received so far into memory: over ``TransferOptions/maximumResponseSize``
    /// fails with ``NetworkError/responseTooLarge(limit:)`` (a chunked body or a decompression bomb).
    public func admit(receivedBytes: Int64) -> NetworkError? {
        let limit = options.maximumResponseSize
        return receivedBytes > Int64(limit) ? .responseTooLarge(limit: limit) : nil
    }

    /// Checks a body that ended: shorter than an uncompressed `Content-Length` means the server closed
    /// mid-body (`URLError.networkConnectionLost`).
    public func verifyComplete(_ head: HTTPURLResponse, for request: URLRequest, receivedBytes: Int64) -> NetworkError? {
        verifyComplete(ResponseHead(head), for: request, receivedBytes: receivedBytes)
    }

    func verifyComplete(_ head: ResponseHead, for request: URLRequest, receivedBytes: Int64) -> NetworkError? {
        guard receivedBytes < head.expectedContentLength,
            let expected = Self.expectedBodyLength(head, method: request.httpMethod), receivedBytes < expected
        else { return nil }
        return .transport(URLError(.networkConnectionLost))
    }

    /// Whether a response can have no body whatever its headers say: to a HEAD request, 1xx, 204, 304.
    public static func hasNoBody(_ head: HTTPURLResponse, method: String?) -> Bool {
        hasNoBody(status: head.statusCode, method: method)
    }

    static func hasNoBody(status: Int, method: String?) -> Bool {
        // Methods are case-sensitive (RFC 9110 §9.1): only `HEAD` is HEAD.
        return (100..<200).contains(status) || status == 204 || status == 304 || method == "HEAD"
    }

    /// The body length the head announces, when it describes the bytes a transport hands over: not for a
    /// content-encoded body (its `Content-Length` is the compressed size; transports hand over decoded
    /// bytes) nor a transfer-encoded one (its framing wins, RFC 9112 §6.3).
    public static func expectedBodyLength(_ head: HTTPURLResponse, method: String?) -> Int64? {
        expectedBodyLength(ResponseHead(head), method: method)
    }

    static func expectedBodyLength(_ head: ResponseHead, method: String?) -> Int64? {
        let length = head.expectedContentLength
        // The fields are scanned only when a length is announced.
        guard length >= 0, !hasNoBody(status: head.statusCode, method: method), !head.isFramed else { return nil }
        return length
    }

    /// Whether a request field named `name` is one the transport writes itself (`Content-Length`,
    /// `Transfer-Encoding`, in any case): a hand-set one would cut the body short, or make the server
    /// wait for one that never comes, so every transport leaves it out.
    static func isRequestFraming(_ name: String) -> Bool {
        switch name.utf8.count {
        case 14: name.caseInsensitiveEquals("Content-Length")
        case 17: name.caseInsensitiveEquals("Transfer-Encoding")
        default: false
        }
    }

    /// Whether a request field's value is nothing but spaces and tabs (or nothing): every transport sends
    /// such a field empty (libcurl would leave it out).
    static func isBlankValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 }
    }

    /// Whether a field named `name` is `User-Agent`, in any case: a request's own keeps the transport
    /// from adding ``UserAgent/default``.
    static func isUserAgent(_ name: String) -> Bool {
        name.utf8.count == 10 && name.caseInsensitiveEquals("User-Agent")
    }

    /// Whether a field named `name` changes what the body's bytes are (`Content-Encoding`) or how they
    /// are delimited (`Transfer-Encoding`), so that `Content-Length` no longer counts what a transport
    /// hands over.
    static func isFraming(_ name: String) -> Bool {
        name.caseInsensitiveEquals("Content-Encoding") || name.caseInsensitiveEquals("Transfer-Encoding")
    }
}
