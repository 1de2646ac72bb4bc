/// An HTTP request method.
///
/// `GET`, `HEAD`, `PUT` and `DELETE` are idempotent; `POST` and `PATCH` are not.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method's name as sent on the wire, e.g. `"GET"`.
    public let rawValue: String

    /// Creates a method from its wire name; ASCII letters are upper-cased (only those: `"poſt"` stays
    /// unlike `POST`, and is no token).
    public init(rawValue: String) {
        self.rawValue = String(decoding: rawValue.utf8.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
    }

    /// Creates a method from a string literal such as `"OPTIONS"`.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// `GET`
    public static let get: HTTPMethod = "GET"
    /// `POST`
    public static let post: HTTPMethod = "POST"
    /// `PUT`
    public static let put: HTTPMethod = "PUT"
    /// `PATCH`
    public static let patch: HTTPMethod = "PATCH"
    /// `DELETE`
    public static let delete: HTTPMethod = "DELETE"
    /// `HEAD`
    public static let head: HTTPMethod = "HEAD"

    /// Whether sending the request twice has the same effect as sending it once (RFC 9110 §9.2.2).
    public var isIdempotent: Bool {
        switch rawValue {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE": true
        default: false
        }
    }

    /// Whether parameters go in the URL query by default (`GET`, `HEAD`, `DELETE`) rather than the body,
    /// for a request without a ``Request/body`` (with one, see ``Request/parameterEncoding``).
    public var encodesParametersInQuery: Bool {
        switch rawValue {
        case "GET", "HEAD", "DELETE": true
        default: false
        }
    }

    /// The wire name.
    public var description: String { rawValue }

    /// Whether the name is an RFC 9110 token (letters, digits, the backtick and `!#$%&'*+-.^_|~`), the
    /// only form a method may take on the wire. A send with any other method fails with
    /// ``NetworkError/invalidRequest(reason:)`` before anything is sent.
    public var isToken: Bool {
        !rawValue.isEmpty && rawValue.utf8.allSatisfy(HTTPHeaders.isTokenByte)
    }
}
