/// A response type that an empty body decodes to: a typed request's ``Request/Value`` for an answer
/// that may have no body (`204 No Content`, a `HEAD`, an empty `200`).
///
/// An empty body decodes to ``emptyBodyValue`` instead of failing. ``NoContent`` and `Optional`
/// (`nil`) conform; any other `Value` fails an empty body with ``NetworkError/decoding(reason:snippet:)``.
public protocol EmptyBodyDecodable: Decodable {
    /// The value of an empty body.
    static var emptyBodyValue: Self { get }
}

/// The ``Request/Value`` of a request whose answer's body you don't read: any body decodes to it
/// (an empty one included), and nothing in the body is checked.
///
/// ```swift
/// struct DeletePost: Request {
///     typealias Value = NoContent
///     let id: Int
///     var method: HTTPMethod { .delete }
///     var path: String { "/posts/\(id)" }
/// }
/// ```
public struct NoContent: EmptyBodyDecodable, Sendable, Hashable {
    /// The value.
    public init() {}

    /// Reads nothing: whatever the body holds, it decodes.
    public init(from decoder: any Decoder) throws {}

    public static var emptyBodyValue: NoContent { NoContent() }
}

extension Optional: EmptyBodyDecodable where Wrapped: Decodable {
    /// `nil`: an empty body is no value.
    public static var emptyBodyValue: Wrapped? { nil }
}
