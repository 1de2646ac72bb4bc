import Foundation

/// Which idle timeouts the transports apply: a finite, positive number of seconds, at most 23 days.
/// Anything else (0, a negative number, NaN, infinity) means none: the send's deadline still ends it.
enum IdleTimeouts {
    /// The longest idle timeout applied (a longer one is this): FoundationNetworking hands libcurl the
    /// milliseconds as a 32-bit number and traps beyond about 24.8 days.
    static let longest: TimeInterval = 2_000_000

    /// `value` as applied, or `nil` for no idle timeout.
    static func effective(_ value: TimeInterval) -> TimeInterval? {
        guard value.isFinite, value > 0 else { return nil }
        return min(value, longest)
    }
}
