import Foundation

/// A user name and password for HTTP Basic authentication.
///
/// Sent pre-emptively as an `Authorization: Basic …` header, so a 401 that follows means they were
/// refused: the send fails with ``NetworkError/unauthorized(_:)``. (A custom `URLRequest` without that
/// header answers a Basic challenge from its own origin with them, once.)
public struct Credentials: Sendable, Hashable {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// Creates credentials.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// The `Authorization` header value: `Basic base64(user:password)`.
    public var authorizationHeader: String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }
}

extension Credentials: CustomStringConvertible, CustomReflectable {
    /// The user's name; never the password.
    public var description: String { "\(user):***" }
    /// The user's name only: `dump` and debuggers never show the password.
    public var customMirror: Mirror { Mirror(self, children: ["user": user], displayStyle: .struct) }
}

/// How urgently a request should be scheduled; maps to `URLSessionTask.priority`.
public enum RequestPriority: Sendable, Hashable {
    /// Background work (task priority 0.25).
    case low
    /// The default (task priority 0.5).
    case `default`
    /// User-visible work (task priority 0.75).
    case high

    /// The matching `URLSessionTask.priority`.
    public var taskPriority: Float {
        switch self {
        case .low: 0.25
        case .default: 0.5
        case .high: 0.75
        }
    }
}

/// What the response body is.
public enum ResponseFormat: Sendable, Hashable {
    /// A JSON document: the content type is checked and the body decoded to ``JSON`` before delivery.
    case json
    /// Raw bytes (an image, a file): no content-type check and no decoding; ``Response/json`` is `.null`.
    case data
}
