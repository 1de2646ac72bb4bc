import Foundation
import Switchboard

/// One HTTP request as the server received it, handed to a route handler.
///
/// ```swift
/// server.route("GET", "/hello/:name") { request in
///     .json(["hello": request.pathParameters["name"] ?? "", "page": request.queryItems["page"] ?? "1"])
/// }
/// ```
public struct ServerRequest: Sendable {
    /// The request method exactly as sent, e.g. `"GET"`.
    public var method: String
    /// The path of the request target without the query, as sent (still percent-encoded).
    public var path: String
    /// The raw query string without the leading `?`; `""` when there is none.
    public var query: String
    /// The query items, percent-decoded with `+` read as a space; the last value of a repeated name wins.
    public var queryItems: [String: String]
    /// Values captured by `:name` segments of the route pattern (percent-decoded); a trailing `*` is stored under `"*"`.
    public var pathParameters: [String: String]
    /// The header fields in the order they were sent, with their names spelled as sent.
    public var headers: [(name: String, value: String)]
    /// The request body, de-chunked; empty when there is none.
    public var body: Data
    /// The HTTP version from the request line, e.g. `"HTTP/1.1"`.
    public var version: String

    let stopSignal: StopSignal?

    /// Creates a request by hand, e.g. to unit-test a route handler without a socket.
    /// - Parameters:
    ///   - method: The request method.
    ///   - target: The path and optional query, e.g. `"/users/7?version=2"`.
    ///   - headers: Header fields in order.
    ///   - body: The body bytes.
    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.init(method: method, target: target, version: "HTTP/1.1", headers: headers, body: body, stopSignal: nil)
    }

    init(
        method: String, target: String, version: String, headers: [(name: String, value: String)], body: Data,
        stopSignal: StopSignal?
    ) {
        var target = target
        // Absolute form (`http://host/path`), as sent to proxies: keep only the path and query.
        if !target.hasPrefix("/"), let schemeEnd = target.range(of: "://") {
            let afterAuthority = target[schemeEnd.upperBound...].firstIndex(of: "/")
            target = afterAuthority.map { String(target[$0...]) } ?? "/"
        }
        if let questionMark = target.firstIndex(of: "?") {
            path = String(target[..<questionMark])
            query = String(target[target.index(after: questionMark)...])
        } else {
            path = target
            query = ""
        }
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        self.method = method
        self.queryItems = FormURLEncoding.decode(query)
        self.pathParameters = [:]
        self.headers = headers
        self.body = body
        self.version = version
        self.stopSignal = stopSignal
    }

    /// The last value of the header `name`, compared case-insensitively; `nil` when absent.
    public func header(_ name: String) -> String? {
        headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The body with a `Content-Encoding: gzip` (or `deflate`) undone (by zlib, up to 64 MiB); the body
    /// as sent without one; `nil` when it is encoded and doesn't decode.
    public var decodedBody: Data? {
        guard let encoding = header("Content-Encoding")?.lowercased(), encoding == "gzip" || encoding == "deflate" else { return body }
        return try? Zlib.shared.get().gunzip(body, limit: 64 << 20)
    }

    /// The (decoded) body as a UTF-8 string, or `nil` when it is not valid UTF-8.
    public var bodyText: String? {
        decodedBody.flatMap { String(data: $0, encoding: .utf8) }
    }

    /// The (decoded) body parsed with `JSONSerialization` (fragments allowed); `nil` when empty or not JSON.
    public var bodyJSON: Any? {
        guard let decoded = decodedBody, !decoded.isEmpty else { return nil }
        return try? JSONSerialization.jsonObject(with: decoded, options: [.fragmentsAllowed])
    }

    /// The (decoded) body decoded as `application/x-www-form-urlencoded`; the last value of a repeated name wins.
    public var formItems: [String: String] {
        FormURLEncoding.decode(String(decoding: decodedBody ?? Data(), as: UTF8.self))
    }

    /// Whether the `Content-Type` header contains `fragment` (case-insensitive), e.g. `"json"`.
    public func contentTypeContains(_ fragment: String) -> Bool {
        header("Content-Type")?.lowercased().contains(fragment.lowercased()) ?? false
    }

    /// Sleeps for `seconds`, waking early when the server stops.
    ///
    /// Use it in slow handlers so `stop()` does not have to wait for them.
    /// - Returns: `true` if the whole time passed, `false` if the server stopped meanwhile.
    @discardableResult
    public func sleep(seconds: TimeInterval) -> Bool {
        if let stopSignal { return stopSignal.sleep(seconds) }
        Thread.sleep(forTimeInterval: seconds)
        return true
    }

    /// Waits until `condition` holds (checked every 2 ms), waking early when the server stops: a
    /// handler that answers once something else has happened (another request arrived, the client
    /// did something), not after a guessed delay.
    /// - Returns: `true` if `condition` came to hold, `false` if the server stopped or `timeout` passed.
    @discardableResult
    public func wait(timeout: TimeInterval = 60, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline, sleep(seconds: 0.002) else { return false }
        }
        return true
    }
}

/// Decoding of `a=1&b=two+words` strings (query strings and form bodies).
enum FormURLEncoding {
    /// Splits on `&` and the first `=`, turns `+` into a space and percent-decodes; the last value wins.
    static func decode(_ text: String) -> [String: String] {
        guard !text.isEmpty else { return [:] }
        var items: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let name: Substring
            let value: Substring
            if let equals = pair.firstIndex(of: "=") {
                name = pair[..<equals]
                value = pair[pair.index(after: equals)...]
            } else {
                name = pair
                value = ""
            }
            items[unescape(name)] = unescape(value)
        }
        return items
    }

    /// `+` → space, then percent-decoding; invalid escapes are kept as written.
    static func unescape(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    /// Percent-decoding only (for path segments); invalid escapes are kept as written.
    static func percentDecode(_ text: Substring) -> String {
        String(text).removingPercentEncoding ?? String(text)
    }
}
