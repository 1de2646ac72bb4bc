import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How Switchboard follows a redirect: each hop is built from the hop before it, as browsers and
/// RFC 9110 §15.4 do, never from the original request.
enum RedirectPolicy {
    /// Headers that carry credentials; never sent to another origin.
    static let credentialHeaders = HTTPHeaders.credentialNames

    /// Headers that describe a body; dropped with it when a redirect turns the request into a GET.
    static let bodyHeaders = ["Content-Type", "Content-Length", "Content-Encoding", "Content-Language", "Content-Location"]

    /// The request of the next hop, from the current hop's request, the redirect's status and the URL
    /// it points to.
    ///
    /// - 301 and 302 turn a `POST` into a `GET`; 303 turns anything but `GET` and `HEAD` into a `GET`
    ///   (what browsers do). Such a hop loses the body and the headers that describe it.
    /// - 307 and 308 keep the method and the body.
    /// - A hop to another origin (scheme, host or port) loses `Authorization`, `Cookie` and
    ///   `Proxy-Authorization` for good: a later hop back doesn't regain them.
    /// - Other headers stay as the current hop had them.
    static func next(after current: URLRequest, status: Int, to url: URL) -> URLRequest {
        var next = current
        next.url = url
        let method = current.httpMethod?.uppercased() ?? "GET"
        let becomesGET = (status == 303 && method != "GET" && method != "HEAD") || ((status == 301 || status == 302) && method == "POST")
        if becomesGET {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.httpBodyStream = nil
            for name in bodyHeaders { next.setValue(nil, forHTTPHeaderField: name) }
        }
        if !sameOrigin(current.url, url) {
            for name in credentialHeaders { next.setValue(nil, forHTTPHeaderField: name) }
        }
        return next
    }

    static func sameOrigin(_ a: URL?, _ b: URL?) -> Bool {
        guard let a, let b else { return false }
        return a.scheme?.lowercased() == b.scheme?.lowercased()
            && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    /// Whether a challenge's protection space (host and port) is `url`'s origin.
    static func isOrigin(of url: URL?, host: String, port: Int) -> Bool {
        guard let url else { return false }
        return url.host?.lowercased() == host.lowercased() && effectivePort(url) == port
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
    }
}
