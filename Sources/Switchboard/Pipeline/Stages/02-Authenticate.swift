import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 2 — authenticate: for every attempt (a retry may carry a fresh token), the request adapters
/// (synchronous: the configuration's, then the request's `pipeline`'s), then the interceptors' `adapt`
/// (asynchronous: a token refresh suspends here) inside the send's ``RefreshScope``, so a refresh's own
/// sends are not adapted by the interceptor that made them. The result is checked (method, URL, every
/// header): a bad one, or an adapter or interceptor that throws, is
/// ``NetworkError/invalidRequest(reason:)`` and nothing is sent.
enum AuthenticateStage {
    /// The adapters on `prepared` and the check at once; then, when there are interceptors, their
    /// `adapt` in order, later (in the driver's task), and the check again.
    static func run<R: Request>(
        _ prepared: RequestBuilder.Prepared, for request: R, configuration: ConfigurationSnapshot, adapters: [any RequestAdapter], interceptors: [any RequestInterceptor],
        adaptedBy: @autoclosure () -> [ObjectIdentifier], scope: RefreshScope
    ) -> Step<Result<URLRequest, NetworkError>> {
        let adapted: URLRequest
        do {
            adapted = try RequestBuilder.adapt(prepared, for: request, configuration: configuration, adapters: adapters)
        } catch {
            return .now(.failure(error))
        }
        guard !interceptors.isEmpty else { return .now(.success(adapted)) }
        let identities = adaptedBy()  // made only for interceptors, which skip an adapter that already ran
        return .later { await intercept(adapted, for: request, interceptors: interceptors, adaptedBy: identities, scope: scope) }
    }

    /// Each interceptor's `adapt`, in order, then the check.
    private static func intercept<R: Request>(
        _ urlRequest: URLRequest, for request: R, interceptors: [any RequestInterceptor], adaptedBy: [ObjectIdentifier], scope: RefreshScope
    ) async -> Result<URLRequest, NetworkError> {
        do {
            var outgoing = try OutgoingRequest(urlRequest)
            outgoing.adaptedBy = adaptedBy
            for interceptor in interceptors {
                do {
                    let given = outgoing
                    outgoing = try await scope.running { try await interceptor.adapt(given, for: request) }
                } catch let error as NetworkError {
                    throw error
                } catch {
                    throw NetworkError.invalidRequest(reason: "interceptor \(type(of: interceptor)) threw: \(error)")
                }
            }
            try RequestBuilder.check(url: outgoing.url, method: outgoing.method.rawValue, headers: outgoing.headers)
            return .success(outgoing.urlRequest)
        } catch {
            return .failure(error as? NetworkError ?? .invalidRequest(reason: "\(error)"))
        }
    }
}
