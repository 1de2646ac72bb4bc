import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Changes the finished request before it is sent, e.g. to add a bearer token.
///
/// Adapters run in order (the configuration's, then the request's) after URL filters and headers, and
/// also on a request's own ``Request/makeURLRequest(baseURL:)``. They change an ``OutgoingRequest``,
/// whose headers are Switchboard's own ``HTTPHeaders``: a value with a CR, LF or NUL fails the send with
/// ``NetworkError/invalidRequest(reason:)`` (on Linux, `URLRequest.setValue` would drop it silently and
/// send the request without the header). They run again for every attempt, so a retry can carry a
/// fresh token: for the first on the thread that calls `send`, for a retry on a global queue; always
/// outside every lock.
///
/// An adapter is the synchronous form of a ``RequestInterceptor`` (it refines it): in
/// ``Configuration/adapters`` or ``RequestPipeline/adapters`` it runs without a task, before the
/// interceptors; in ``Configuration/interceptors`` it runs in its place among them. One listed in
/// both (an adapter that also decides retries, listed twice as it had to be before) adapts once, with
/// the adapters; its `retry` runs with the interceptors. "The same" means the same object for a class,
/// and the same type for a value type (a struct has no identity): two differently configured values of
/// one struct type, one in each list, adapt once — make such a type a class, as
/// ``ClosureRequestAdapter`` is. An `async` `adapt` of its own, if it writes one, runs with the
/// interceptors as before.
public protocol RequestAdapter: RequestInterceptor {
    /// Changes `request` in place.
    /// - Throws: any error; the send fails with ``NetworkError/invalidRequest(reason:)``.
    func adapt(_ request: inout OutgoingRequest, for original: any Request) throws
}

extension RequestAdapter {
    /// The interceptors' form of the synchronous `adapt`: `request` changed by it, unless an adapter of
    /// this type already ran among the send's adapters.
    public func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest {
        guard !request.adaptedBy.contains(adapterIdentity) else { return request }
        var adapted = request
        do {
            try adapt(&adapted, for: original)
        } catch {
            throw NetworkError.invalidRequest(reason: "request adapter \(Self.self) threw: \(error)")
        }
        return adapted
    }

    /// What makes two adapters the same for the "adapts once" rule: the object for a class, the type
    /// for a value.
    var adapterIdentity: ObjectIdentifier {
        Self.self is AnyClass ? ObjectIdentifier(self as AnyObject) : ObjectIdentifier(Self.self)
    }
}

/// The request as it will be sent, for ``RequestAdapter``s to change.
public struct OutgoingRequest: Sendable {
    /// The URL (http or https, with a host).
    public var url: URL
    /// The method (an RFC 9110 token).
    public var method: HTTPMethod
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Data?
    /// What the adapters started from (cache policy and other `URLRequest` settings are kept from it).
    let base: URLRequest
    /// The send's adapters (``RequestAdapter/adapterIdentity``), which ran before the interceptors: the
    /// same adapter among the interceptors doesn't adapt again.
    var adaptedBy: [ObjectIdentifier] = []

    init(_ urlRequest: URLRequest) throws(NetworkError) {
        guard let url = urlRequest.url else { throw .invalidRequest(reason: "the request has no URL") }
        self.url = url
        method = HTTPMethod(rawValue: urlRequest.httpMethod ?? "GET")
        headers = HTTPHeaders(urlRequest.allHTTPHeaderFields ?? [:])
        body = urlRequest.httpBody
        base = urlRequest
    }

    /// The `URLRequest` to send.
    var urlRequest: URLRequest {
        var request = base
        request.url = url
        request.httpMethod = method.rawValue
        // Assigned whole: the headers are checked already, and `setValue` capitalises every name.
        request.allHTTPHeaderFields = headers.dictionary
        request.httpBody = body
        return request
    }
}

/// An adapter from a closure.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration {
///     $0.adapters.append(ClosureRequestAdapter { request, _ in
///         request.headers["Authorization"] = "Bearer \(tokenStore.token)"
///     })
/// }
/// ```
///
/// A class, so that two of them are never "the same adapter" (see ``RequestAdapter``) unless they are
/// one object.
public final class ClosureRequestAdapter: RequestAdapter {
    private let body: @Sendable (inout OutgoingRequest, any Request) throws -> Void

    /// Creates an adapter that calls `body`.
    public init(_ body: @escaping @Sendable (inout OutgoingRequest, any Request) throws -> Void) {
        self.body = body
    }

    /// Calls the closure.
    public func adapt(_ request: inout OutgoingRequest, for original: any Request) throws {
        try body(&request, original)
    }
}
