import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How Switchboard follows a redirect.
enum RedirectPolicy {
    /// Headers that carry credentials; never sent to another origin.
    static let credentialHeaders = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// The most redirects followed for one request.
    static let maximumRedirects = 16

    /// Whether Switchboard must follow this redirect itself, with a new task: URLSession on Linux keeps
    /// the method of a 307/308 but sends an empty body, even when the proposed request carries it.
    static func needsManualFollow(status: Int, original: URLRequest) -> Bool {
        (status == 307 || status == 308) && !(original.httpBody?.isEmpty ?? true)
    }

    /// The request to send next.
    ///
    /// - 307 and 308 keep the method and body.
    /// - A redirect to another origin (scheme, host or port) loses `Authorization`, `Cookie` and
    ///   `Proxy-Authorization` (URLSession on Linux forwards them).
    static func follow(from original: URLRequest, status: Int, to proposed: URLRequest) -> URLRequest {
        var next = proposed
        if status == 307 || status == 308 {
            next.httpMethod = original.httpMethod
            if next.httpBody == nil, let body = original.httpBody {
                next.httpBody = body
                if next.value(forHTTPHeaderField: "Content-Type") == nil {
                    next.setValue(original.value(forHTTPHeaderField: "Content-Type"), forHTTPHeaderField: "Content-Type")
                }
            }
        }
        if !sameOrigin(original.url, next.url) {
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
