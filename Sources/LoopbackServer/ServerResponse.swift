import Foundation

/// What a route handler answers: a status, header fields and a body (or a deliberate misbehaviour).
///
/// ```swift
/// server.route("GET", "/hello") { _ in .json(["hello": "world"]) }
/// server.route(nil, "/gone") { _ in .status(410) }
/// server.route("GET", "/broken") { _ in ServerResponse(status: 200, body: .abort(sending: Data("{".utf8), declaredLength: 100)) }
/// ```
public struct ServerResponse: Sendable {
    /// How the body is delivered.
    public enum Body: Sendable {
        /// A complete body sent with `Content-Length`.
        case data(Data)
        /// A body sent with `Transfer-Encoding: chunked`, one chunk per element, sleeping `interval`
        /// seconds between chunks. Empty elements are skipped (an empty chunk would end the body).
        case chunks([Data], interval: TimeInterval)
        /// Declares `Content-Length: declaredLength`, sends only `sending`, then closes the connection.
        case abort(sending: Data, declaredLength: Int)
        /// Closes the connection without sending a single byte.
        case closeWithoutResponse
        /// Sends `bytes` exactly as given, status line and headers included (the response's status and
        /// headers are ignored), then closes the connection: for malformed answers.
        case raw(Data)
        /// Sends `bytes` exactly as given, then holds the connection open (reading nothing more) until
        /// the client closes it or the server stops: a malformed answer whose client must not wait for
        /// the close to know.
        case rawHeld(Data)
        /// Never answers: holds the connection open until the client closes it or the server stops.
        case never
        /// Sends `pieces` exactly as given, waiting `interval` seconds between them, then closes: a
        /// response dripped byte by byte, headers included.
        case rawDrip([Data], interval: TimeInterval)
        /// Sends `pieces` as ``rawDrip(_:interval:)`` does, then holds the connection open as
        /// ``rawHeld(_:)`` does: a server that goes silent mid-body.
        case rawDripHeld([Data], interval: TimeInterval)
        /// Resets the connection (TCP RST) without sending anything.
        case reset
        /// `length` bytes with `Content-Length`, made piece by piece as they are sent (never all in
        /// memory): `fill(offset, buffer)` writes the bytes from `offset` into `buffer`. With
        /// `abortAfter`, the connection closes after that many bytes. With `pieceEnd`, a piece ends at
        /// that offset (pieces are otherwise 256 KiB), so a `fill` that waits there stops exactly there.
        case generated(length: Int, abortAfter: Int?, pieceEnd: Int? = nil, fill: @Sendable (Int, UnsafeMutableRawBufferPointer) -> Void)
    }

    /// The status code, e.g. 200.
    public var status: Int
    /// Header fields in order. `Content-Length`, `Transfer-Encoding` and `Connection` are managed by the
    /// server and ignored here.
    public var headers: [(String, String)]
    /// The body.
    public var body: Body

    /// Creates a response.
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: Header fields in order.
    ///   - body: The body; empty by default.
    public init(status: Int, headers: [(String, String)] = [], body: Body = .data(Data())) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response whose body is `object` serialized with `JSONSerialization` (sorted keys, no escaped
    /// slashes). Pass `NSNull()` for `null`. An object that cannot be serialized yields a 500.
    /// - Parameters:
    ///   - object: A dictionary, array or fragment of JSON-compatible values.
    ///   - status: The status code; 200 by default.
    ///   - headers: Extra header fields.
    public static func json(_ object: Any, status: Int = 200, headers: [(String, String)] = []) -> ServerResponse {
        guard JSONSerialization.isValidJSONObject(object) || isFragment(object),
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else {
            return .text("{\"error\":\"response is not valid JSON\"}", status: 500, contentType: "application/json")
        }
        return .json(data, status: status, headers: headers)
    }

    /// A JSON response with a body already encoded as `data` (sent as is, even if it is not valid JSON).
    /// - Parameters:
    ///   - data: The body bytes.
    ///   - status: The status code; 200 by default.
    ///   - headers: Extra header fields.
    public static func json(_ data: Data, status: Int = 200, headers: [(String, String)] = []) -> ServerResponse {
        ServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: .data(data))
    }

    /// A text response.
    /// - Parameters:
    ///   - text: The body, encoded as UTF-8.
    ///   - status: The status code; 200 by default.
    ///   - contentType: The `Content-Type`; `text/plain; charset=utf-8` by default.
    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> ServerResponse {
        ServerResponse(status: status, headers: [("Content-Type", contentType)], body: .data(Data(text.utf8)))
    }

    /// A response with only a status code: an empty body for 204 and 304, otherwise the JSON
    /// `{"status": code, "message": "status <code>"}`.
    /// - Parameter code: The status code.
    public static func status(_ code: Int) -> ServerResponse {
        if code == 204 || code == 304 { return ServerResponse(status: code) }
        return .json(["status": code, "message": "status \(code)"], status: code)
    }

    private static func isFragment(_ object: Any) -> Bool {
        object is String || object is NSNumber || object is NSNull || object is Int || object is Double || object is Bool
    }
}
