import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which idle timeouts the transports apply: a finite, positive number of seconds, at most 23 days.
/// Anything else (0, a negative number, NaN, infinity) means none: the send's deadline still ends it.
enum IdleTimeouts {
    /// The longest idle timeout applied (a longer one is this): FoundationNetworking hands libcurl the
    /// milliseconds as a 32-bit number and traps beyond about 24.8 days.
    static let longest: TimeInterval = 2_000_000

    /// The idle timeout a transfer gets, or `nil` for none: the options' one; else the request's own
    /// `timeoutInterval` when the caller set one (not `URLRequest`'s default of 60 s); else the
    /// transport's configuration's. The same rule on every transport.
    static func chosen(options: TransferOptions, request: URLRequest, configured: TimeInterval) -> TimeInterval? {
        effective(options.idleTimeout ?? own(request) ?? configured)
    }

    /// The `timeoutInterval` the maker of `request` set, or `nil` for `URLRequest`'s default of 60 s
    /// (which can't be told from one not set).
    static func own(_ request: URLRequest) -> TimeInterval? {
        request.timeoutInterval != 60 ? request.timeoutInterval : nil
    }

    /// `value` as applied, or `nil` for no idle timeout.
    static func effective(_ value: TimeInterval) -> TimeInterval? {
        guard value.isFinite, value > 0 else { return nil }
        return min(value, longest)
    }
}
