/// Which redirects a transfer follows: how many, and to which URL schemes. Every hop is built by
/// the same rule whatever these say (see <doc:LinuxNotes> and ``TransferRules``): the method and body as RFC 9110
/// and browsers have them, credentials dropped at the first cross-origin hop, cookies recomputed.
///
/// Only the credential headers (`Authorization`, `Proxy-Authorization`, `Cookie`) are dropped: a secret
/// in a header of your own (`X-API-Key`) goes on to the next origin, as in browsers. Keep such a secret
/// off requests that may be redirected elsewhere, or set `allowedSchemes`/`maximumCount` to refuse them.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.redirects = .none }   // a 3xx is the answer
/// ```
public struct RedirectRules: Sendable, Hashable {
    /// The most redirects one attempt follows; one more fails with `URLError.httpTooManyRedirects`.
    /// 0 follows none: the 3xx response is the attempt's answer (validated like any other status).
    public var maximumCount: Int
    /// The URL schemes a redirect may lead to: http, https, or both (`["https"]` refuses a downgrade).
    /// Another fails with `URLError.unsupportedURL` and is not followed (URLSession could not follow
    /// others anyway).
    public var allowedSchemes: Set<String>

    /// Creates rules.
    public init(maximumCount: Int = 16, allowedSchemes: Set<String> = ["http", "https"]) {
        self.maximumCount = max(0, maximumCount)
        self.allowedSchemes = Set(allowedSchemes.map { $0.lowercased() })
    }

    /// Up to 16 redirects, to http and https URLs.
    public static let `default` = RedirectRules()

    /// No redirects are followed: a 3xx is the answer.
    public static let none = RedirectRules(maximumCount: 0)
}
