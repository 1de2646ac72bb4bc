import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 9 — decide: a failed attempt is retried, or the send ends. The interceptors are asked first,
/// in order (``RequestInterceptor/retry(_:)``; an ``AuthenticationInterceptor`` refreshes the token
/// here, suspended, and answers retry); the first that doesn't pass decides. Otherwise the
/// ``RetryPolicy`` does (the request's `pipeline`'s, else the configuration's): which errors, which
/// methods, the backoff, `Retry-After`. A cancel is never retried; interceptors decide about at most
/// ``maximumAttempts`` attempts. The wait before a retry holds the send weakly, so a cancel during it
/// ends the send at once.
enum DecideStage {
    /// The most attempts interceptors may ask for, whatever they decide.
    static var maximumAttempts: Int { 16 }

    /// The retry policy's delay before the next attempt, or `nil` for no retry.
    static func policyDelay(after attempt: Int, _ outcome: Outcome, policy: RetryPolicy, method: HTTPMethod) -> TimeInterval? {
        guard let error = outcome.failure, !error.isCancelled else { return nil }
        return policy.delay(afterAttempt: attempt, error: error, method: method)
    }

    /// Whether the interceptors are asked about attempt `number`'s outcome.
    static func asksInterceptors(_ interceptors: [any RequestInterceptor], _ outcome: Outcome, attempt number: Int) -> Bool {
        guard !interceptors.isEmpty, let error = outcome.failure else { return false }
        return !error.isCancelled && number < maximumAttempts
    }

    /// The interceptors' decision: the delay before the next attempt, or `policyDelay` when none of them
    /// decides (`.doNotRetry` passes).
    static func run(_ context: RetryContext, interceptors: [any RequestInterceptor], scope: RefreshScope, policyDelay: TimeInterval?) async -> TimeInterval? {
        for interceptor in interceptors {
            switch await scope.running({ await interceptor.retry(context) }) {
            case .doNotRetry: continue
            case .retry: return 0
            case .retryAfter(let seconds): return max(0, seconds)
            }
        }
        return policyDelay
    }
}
