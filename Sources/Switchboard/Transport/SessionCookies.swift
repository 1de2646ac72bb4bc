import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the URLSession transport keeps its cookie jar (``Configuration/cookies``), by the libcurl
/// transport's rules (`CurlTransfer`'s header list and `storeCookies`):
/// - every response head a transfer receives (a redirect's, a 401's, the final one) stores the cookies
///   it sets, a `Set-Cookie` field found whatever the case of its name;
/// - every hop carries the jar's cookies for its URL, unless the request has a `Cookie` of its own;
/// - a request whose `httpShouldHandleCookies` is `false` neither stores nor carries them.
///
/// On Linux the delegate does all of it, and the session has no jar: FoundationNetworking would parse
/// every line of every response head as a possible `Set-Cookie` as it arrives (about 23 µs a request
/// on this project's bench machine, measured in docs/perf-log.md), miss a `set-cookie` in lower case,
/// replace a request's own `Cookie`, and ignore `httpShouldHandleCookies`. On Apple platforms the
/// system keeps the jar (this path is not built here); the delegate only stores a redirect's cookies
/// and puts them on the next hop, which the system would not.
struct SessionCookies: Sendable {
    /// The jar, `nil` with ``CookiePolicy/none``.
    let jar: HTTPCookieStorage?

    /// Whether the delegate keeps the jar on every hop (Linux), rather than the system.
    static var keptByDelegate: Bool {
        #if canImport(FoundationNetworking)
        true
        #else
        false
        #endif
    }

    /// Stores the cookies `response` (to `request`, the hop that was sent) sets.
    func store(from response: HTTPURLResponse, for request: URLRequest) {
        // One lookup (`HTTPURLResponse` names every spelling of a field one way, and joins repeated
        // lines with ", ", which the cookie parser splits again); `allHeaderFields` would bridge
        // every field, about 3.5 µs a response.
        guard let jar, let value = response.value(forHTTPHeaderField: "Set-Cookie"), request.httpShouldHandleCookies, let url = response.url else { return }
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": value], for: url)
        if !cookies.isEmpty { jar.setCookies(cookies, for: url, mainDocumentURL: nil) }
    }

    /// The `Cookie` value the jar has for `request`, or `nil` for none (no jar, no cookies for its URL,
    /// or a request that doesn't handle cookies).
    func field(for request: URLRequest) -> String? {
        guard let jar, request.httpShouldHandleCookies, let url = request.url, let cookies = jar.cookies(for: url), !cookies.isEmpty else { return nil }
        return HTTPCookie.requestHeaderFields(with: cookies)["Cookie"]
    }

    /// Sets the next hop's `Cookie` header from the jar as it is now (cookies set by this redirect
    /// included), for the next hop's own URL. Recomputed at every hop, so a changed cookie is sent with
    /// its new value.
    func setJarCookies(on next: inout URLRequest) {
        next.setValue(field(for: next), forHTTPHeaderField: "Cookie")
    }
}
