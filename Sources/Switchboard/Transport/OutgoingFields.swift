import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the URLSession transport readies each hop's header fields for FoundationNetworking: the first
/// hop (`SessionDelegate.startTask`) and each redirect FoundationNetworking follows (the redirect rules
/// make the next hop from the request as the app gave it, not from what went out). The libcurl
/// transport applies the same rules as it writes its header list (`CurlTransfer.configureHeaders`).
///
/// - A value of only spaces or tabs goes as an empty header (FoundationNetworking would pass it to
///   libcurl as it is, which then leaves the header out).
/// - The transport frames the body (or its absence): a hand-set `Content-Length` or
///   `Transfer-Encoding` would cut it short, or make the server wait for a body that never comes.
/// - The package's `User-Agent` goes on a request that has none.
struct OutgoingFields: Sendable {
    /// The `User-Agent` put on a request that has none (``UserAgent/default``); `nil` when the session's
    /// own settings name one, which FoundationNetworking then adds. On the request rather than in the
    /// session's `httpAdditionalHeaders`: FoundationNetworking merges those into every request's fields
    /// one by one, lowercasing each name (about 3 µs a request, measured in docs/perf-log.md).
    let userAgent: String?

    /// Readies `request`'s fields in one pass over them, changing the request only when one needs it
    /// (a change copies it on Linux).
    func prepare(_ request: inout URLRequest) {
        var needsUserAgent = userAgent != nil
        var needsRewrite = false
        if let fields = request.allHTTPHeaderFields {
            for (name, value) in fields {
                if needsUserAgent, TransferRules.isUserAgent(name) { needsUserAgent = false }
                if TransferRules.isRequestFraming(name) || Self.isBlank(value) { needsRewrite = true }
            }
            if needsRewrite {
                for (name, value) in fields {
                    if TransferRules.isRequestFraming(name) {
                        request.setValue(nil, forHTTPHeaderField: name)
                    } else if Self.isBlank(value) {
                        request.setValue("", forHTTPHeaderField: name)
                    }
                }
            }
        }
        if needsUserAgent, let userAgent {
            // The whole table at once: `setValue` re-validates and capitalizes on Linux, and the value
            // is made of tokens (``UserAgent``).
            var fields = request.allHTTPHeaderFields ?? [:]
            fields["User-Agent"] = userAgent
            request.allHTTPHeaderFields = fields
        }
    }

    /// A value that needs rewriting: not empty, but only spaces and tabs.
    private static func isBlank(_ value: String) -> Bool {
        !value.isEmpty && TransferRules.isBlankValue(value)
    }
}
