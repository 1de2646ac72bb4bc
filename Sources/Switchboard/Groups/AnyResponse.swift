import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``Response`` whatever its request type: what a group of requests of different types hands back.
/// Get the typed response with ``typed(_:)``, or read the JSON directly.
///
/// ```swift
/// let responses = try await BatchRequest([GetImage("1.jpg"), GetUserInfo(id: "123")]).run()
/// let user = responses[1].typed(GetUserInfo.self)?.json["user"]
/// let profile = responses[1].anyValue as? Profile   // a typed request's value
/// ```
public protocol AnyResponse: Sendable {
    /// The request this answers.
    var anyRequest: any Request { get }
    /// The HTTP response.
    var httpResponse: HTTPURLResponse { get }
    /// The body, as received.
    var data: Data { get }
    /// The body decoded as JSON (`.null` for a `.data` request).
    var json: JSON { get }
    /// The body decoded into the request's ``Request/Value`` (``Response/value``): a `User` for a
    /// typed request, the ``JSON`` for the default. Cast it, or get the typed response with ``typed(_:)``.
    var anyValue: any Sendable { get }
    /// The HTTP status code.
    var statusCode: Int { get }
}

extension AnyResponse {
    /// This response as the response to a request of type `R`, or `nil` when it answers another type.
    public func typed<R: Request>(_ type: R.Type = R.self) -> Response<R>? { self as? Response<R> }
}

extension Response: AnyResponse {
    /// The request this answers.
    public var anyRequest: any Request { request }
    /// ``value``, whatever its type.
    public var anyValue: any Sendable { value }
}
