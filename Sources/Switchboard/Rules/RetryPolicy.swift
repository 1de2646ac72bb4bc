import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how often a failed request is sent again.
///
/// Retries happen inside one send: observers and the closure see one `started` and one terminal event,
/// and ``Response/attempts`` says how many attempts it took. Each attempt has its own deadline
/// (``Request/timeout``). By default only idempotent methods are retried (`GET`, `HEAD`, `PUT`,
/// `DELETE`…); a request opts in for others with ``retryingNonIdempotentRequests()``.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.retryPolicy = .exponential(maximumAttempts: 3) }
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// The most attempts, the first included (1 means no retry).
    public var maximumAttempts: Int
    /// The wait before the first retry, in seconds.
    public var initialDelay: TimeInterval
    /// How much longer each next wait is.
    public var multiplier: Double
    /// The longest wait between attempts, in seconds.
    public var maximumDelay: TimeInterval
    /// Random spread of each wait, as a fraction (0.2: ±20 %).
    public var jitter: Double
    /// Statuses worth retrying.
    public var retryableStatusCodes: Set<Int>
    /// Transport errors worth retrying.
    public var retryableURLErrorCodes: Set<Int>
    /// Whether timeouts are retried: the attempt's deadline (``NetworkError/timedOut(after:)``) and the
    /// idle timeout (``NetworkError/idleTimeout(after:)``).
    public var retriesTimeouts: Bool
    /// Whether `POST`, `PATCH` and other non-idempotent methods are retried.
    public var retriesNonIdempotentRequests: Bool
    /// The longest `Retry-After` honoured, in seconds; a longer one ends the retries.
    public var maximumRetryAfter: TimeInterval

    /// Creates a policy.
    public init(
        maximumAttempts: Int,
        initialDelay: TimeInterval = 0.2,
        multiplier: Double = 2,
        maximumDelay: TimeInterval = 10,
        jitter: Double = 0.2,
        retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        retryableURLErrorCodes: Set<Int> = RetryPolicy.transientURLErrorCodes,
        retriesTimeouts: Bool = true,
        retriesNonIdempotentRequests: Bool = false,
        maximumRetryAfter: TimeInterval = 60
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = max(0, initialDelay)
        self.multiplier = max(1, multiplier)
        self.maximumDelay = max(0, maximumDelay)
        self.jitter = min(1, max(0, jitter))
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableURLErrorCodes = retryableURLErrorCodes
        self.retriesTimeouts = retriesTimeouts
        self.retriesNonIdempotentRequests = retriesNonIdempotentRequests
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// No retries.
    public static let none = RetryPolicy(maximumAttempts: 1)

    /// Exponential backoff with jitter: waits of about `initialDelay`, ×`multiplier` each time.
    public static func exponential(maximumAttempts: Int = 3, initialDelay: TimeInterval = 0.2, maximumDelay: TimeInterval = 10) -> RetryPolicy {
        RetryPolicy(maximumAttempts: maximumAttempts, initialDelay: initialDelay, maximumDelay: maximumDelay)
    }

    /// A copy that also retries non-idempotent requests (only if the server is known to tolerate it).
    public func retryingNonIdempotentRequests() -> RetryPolicy {
        var copy = self
        copy.retriesNonIdempotentRequests = true
        return copy
    }

    /// Connection lost, cannot connect, DNS failure, not connected. (Timeouts are governed by
    /// ``retriesTimeouts``.)
    public static let transientURLErrorCodes: Set<Int> = [
        URLError.Code.networkConnectionLost, .cannotConnectToHost, .cannotFindHost,
        .dnsLookupFailed, .notConnectedToInternet,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    /// The wait before attempt `attempt + 1`, or `nil` when `error` after attempt `attempt` should end
    /// the send.
    /// - Parameters:
    ///   - attempt: the attempt that just failed, from 1.
    ///   - error: how it failed.
    ///   - method: the request's method.
    ///   - now: the current date, for `Retry-After` dates.
    func delay(afterAttempt attempt: Int, error: NetworkError, method: HTTPMethod, now: Date = Date()) -> TimeInterval? {
        guard attempt < maximumAttempts, method.isIdempotent || retriesNonIdempotentRequests else { return nil }
        switch error {
        case .httpStatus(let response) where retryableStatusCodes.contains(response.statusCode):
            if let header = response.headers["Retry-After"] {
                guard let wait = RetryPolicy.parseRetryAfter(header, now: now), wait <= maximumRetryAfter else { return nil }
                return max(wait, 0)
            }
            return backoff(afterAttempt: attempt)
        case .transport(let urlError) where retryableURLErrorCodes.contains(urlError.code.rawValue):
            return backoff(afterAttempt: attempt)
        case .timedOut where retriesTimeouts, .idleTimeout where retriesTimeouts:
            return backoff(afterAttempt: attempt)
        default:
            return nil
        }
    }

    /// `initialDelay × multiplier^(attempt-1)`, capped, spread by ±`jitter`.
    func backoff(afterAttempt attempt: Int) -> TimeInterval {
        let base = min(maximumDelay, initialDelay * pow(multiplier, Double(max(0, attempt - 1))))
        guard jitter > 0, base > 0 else { return base }
        return min(maximumDelay, base * Double.random(in: (1 - jitter)...(1 + jitter)))
    }

    /// Seconds to wait from a `Retry-After` value: delta-seconds or an HTTP date.
    static func parseRetryAfter(_ value: String, now: Date = Date()) -> TimeInterval? {
        // Only ASCII is a valid Retry-After; anything else never reaches DateFormatter, which traps on
        // Linux for some non-ASCII input (a combining mark after a letter, found by fuzzing).
        guard value.utf8.allSatisfy({ $0 < 0x80 }), value.utf8.count <= 64 else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return seconds >= 0 ? TimeInterval(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
