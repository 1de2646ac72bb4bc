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

    /// What attempt `number`'s outcome leads to.
    enum Decision {
        /// Settle now: retry after the retry policy's delay, or end the send (`nil`).
        case settle(delay: TimeInterval?)
        /// Ask the interceptors about `error` (`answer`, run in the driver's task, gives the delay before
        /// the next attempt), with the retry policy's delay for when the deadline cuts the asking short.
        case ask(NetworkError, policyDelay: TimeInterval?, answer: @Sendable (RetryContext) async -> TimeInterval?)
    }

    /// The retry policy's decision, or that the interceptors are asked first (in order; the first that
    /// doesn't pass decides, and `policyDelay` answers when none does).
    static func run(
        after number: Int, _ outcome: Outcome, policy: RetryPolicy, method: HTTPMethod, interceptors: [any RequestInterceptor], scope: RefreshScope
    ) -> Decision {
        guard let error = outcome.failure, !error.isCancelled else { return .settle(delay: nil) }
        let policyDelay = policy.delay(afterAttempt: number, error: error, method: method)
        guard !interceptors.isEmpty, number < maximumAttempts else { return .settle(delay: policyDelay) }
        return .ask(error, policyDelay: policyDelay) { context in
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
}
