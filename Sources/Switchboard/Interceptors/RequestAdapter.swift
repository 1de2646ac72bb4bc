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
public protocol RequestAdapter: Sendable {
    /// Changes `request` in place.
    /// - Throws: any error; the send fails with ``NetworkError/invalidRequest(reason:)``.
    func adapt(_ request: inout OutgoingRequest, for original: any Request) throws
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
public struct ClosureRequestAdapter: RequestAdapter {
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
