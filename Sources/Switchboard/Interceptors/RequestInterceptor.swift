import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Asynchronous adaptation of every attempt, and a say in whether a failed attempt is retried: where a
/// token is fetched, put on the request, and refreshed after a 401 (see ``AuthenticationInterceptor``).
///
/// Interceptors (``Configuration/interceptors``) run in order after the synchronous
/// ``RequestAdapter``s, for every attempt, on Swift's concurrency pool; they may suspend. A cancel while
/// they run ends the send at once, on the cancelling thread (their task is cancelled; what they return
/// later is dropped), unless the attempt's deadline already stopped them: then within a second. The
/// attempt's deadline ends the attempt: `adapt`'s task is cancelled and the attempt fails with
/// ``NetworkError/timedOut(after:)`` when it returns, or a second later if it ignores the cancel (the
/// ``RetryPolicy`` may retry it); a `retry` decision still pending is left to the policy alone. Both
/// methods have default implementations: adapt returns the request unchanged, retry says
/// ``RetryDecision/doNotRetry``. A ``RequestAdapter`` is an interceptor's synchronous form: the one
/// protocol for changing what is sent and deciding retries, sync or async.
public protocol RequestInterceptor: Sendable {
    /// The request to send for this attempt.
    /// - Throws: a ``NetworkError`` to fail the send with it; any other error fails it with
    ///   ``NetworkError/invalidRequest(reason:)``.
    func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest

    /// Whether the attempt that failed with `context.error` is tried again. The first interceptor that
    /// doesn't answer ``RetryDecision/doNotRetry`` decides; when all do, the ``RetryPolicy`` does.
    func retry(_ context: RetryContext) async -> RetryDecision
}

extension RequestInterceptor {
    public func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest { request }
    public func retry(_ context: RetryContext) async -> RetryDecision { .doNotRetry }
}

/// What an interceptor knows about a failed attempt.
public struct RetryContext: Sendable {
    /// The request the attempt sent (after every adapter and interceptor).
    public let request: OutgoingRequest
    /// The request value being sent.
    public let original: any Request
    /// How the attempt failed.
    public let error: NetworkError
    /// The attempt that failed, from 1.
    public let attempt: Int
    /// Every failed attempt's error so far, this one last.
    public let errors: [NetworkError]
}

/// What an interceptor decides about a failed attempt.
public enum RetryDecision: Sendable, Hashable {
    /// Try again now.
    case retry
    /// Try again after this many seconds (a cancel during the wait ends the send at once).
    case retryAfter(TimeInterval)
    /// No say: the next interceptor, or the ``RetryPolicy``, decides.
    case doNotRetry
}
