import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Changes the finished `URLRequest` before it is sent, e.g. to add a bearer token.
///
/// Adapters run in order (the configuration's, then the request's) after URL filters and headers, and
/// also on a request's own ``Request/makeURLRequest(baseURL:)``. Headers they set are checked like any
/// other (no CR, LF or NUL). They run on the thread that calls `send`.
public protocol RequestAdapter: Sendable {
    /// The request to send instead of `urlRequest`.
    /// - Throws: any error; the send fails with ``NetworkError/invalidRequest(reason:)``.
    func adapt(_ urlRequest: URLRequest, for request: any Request) throws -> URLRequest
}

/// An adapter from a closure.
///
/// ```swift
/// Switchboard.shared.configuration.requestAdapters.append(ClosureRequestAdapter { urlRequest, _ in
///     var adapted = urlRequest
///     adapted.setValue("Bearer \(tokenStore.token)", forHTTPHeaderField: "Authorization")
///     return adapted
/// })
/// ```
public struct ClosureRequestAdapter: RequestAdapter {
    private let body: @Sendable (URLRequest, any Request) throws -> URLRequest

    /// Creates an adapter that calls `body`.
    public init(_ body: @escaping @Sendable (URLRequest, any Request) throws -> URLRequest) {
        self.body = body
    }

    /// What the closure returns.
    public func adapt(_ urlRequest: URLRequest, for request: any Request) throws -> URLRequest {
        try body(urlRequest, request)
    }
}
