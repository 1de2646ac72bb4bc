import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which cookies a transport adds to the requests it sends (``Transport/addedCookies``). The response
/// cache counts them as credentials: a request the transport will put cookies on is neither served
/// from nor stored in the cache unless its policy has ``CachePolicy/cachesAuthenticatedRequests``, and
/// then its entry is keyed by them, so one user's entry never answers another's request.
///
/// A transport of your own that wraps another passes the inner one's on:
/// ```swift
/// final class Metered: Transport {
///     let inner: any Transport
///     init(_ inner: any Transport) { self.inner = inner }
///     var addedCookies: TransportCookies { inner.addedCookies }
///     func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
///         inner.perform(request, options: options, callbacks: callbacks)
///     }
/// }
/// ```
public enum TransportCookies: Sendable {
    /// It adds none.
    case none
    /// It adds the cookies `jar` holds for a request's URL (unless the request has a `Cookie` of its
    /// own or doesn't handle cookies).
    case jar(HTTPCookieStorage)
    /// It doesn't say (the default for a transport of your own): its requests may carry cookies the
    /// cache can't see, so the cache is not used for them at all.
    case unknown

    /// The jar, for ``jar(_:)``.
    var jar: HTTPCookieStorage? {
        if case .jar(let jar) = self { return jar }
        return nil
    }
}

extension Transport {
    /// ``TransportCookies/unknown``: say what your transport adds, or no request it sends uses the
    /// response cache.
    public var addedCookies: TransportCookies { .unknown }
}

extension TransportCookies {
    /// The `Cookie` field both transports put on a request to `url` from `jar`'s cookies for it, or
    /// `nil` when there are none to send; the response cache keys an entry by the same field.
    ///
    /// FoundationNetworking's `cookies(for:)` on Linux matches only the host, so the rest of RFC 6265's
    /// rules (§5.4) are applied here: a `Secure` cookie goes only over https, a cookie only to its path
    /// and below it, and one past its `expiresDate` not at all (the jar drops those only when it next
    /// stores one). The cookies go longest path first, then by name, so the field is the same on
    /// every launch (the jar returns them in no fixed order). What FoundationNetworking's jar doesn't
    /// record can't be applied: LinuxNotes lists it (a `Set-Cookie` without `Path` stored for `/`, a
    /// `Max-Age` on a cookie without `Version=1` ignored, a persisted cookie's `Secure` lost).
    ///
    /// A cookie whose name or value holds a control character other than a tab is left out too, the
    /// others go: a CR or LF would end the `Cookie` line and add fields of its own to the request, a NUL
    /// would cut it short, and strict servers refuse the rest. The app can store one
    /// (`HTTPCookie(properties:)` takes any value on Linux), and so can a server (a bare CR inside a
    /// `Set-Cookie` line).
    static func field(from jar: HTTPCookieStorage, for url: URL, now: Date = Date()) -> String? {
        // An empty jar is the usual case, and asking it for all its cookies is cheaper than for a
        // URL's (which parses the host).
        guard jar.cookies?.isEmpty == false, let cookies = jar.cookies(for: url), !cookies.isEmpty else { return nil }
        let overTLS = url.scheme?.lowercased() == "https"
        let path = requestPath(of: url)
        let sendable = cookies.filter { cookie in
            (overTLS || !cookie.isSecure) && (cookie.expiresDate.map { $0 > now } ?? true) && pathMatches(path, cookie: cookie.path)
                && !hasControlCharacter(cookie.name) && !hasControlCharacter(cookie.value)
        }
        guard !sendable.isEmpty else { return nil }
        let ordered = sendable.sorted { a, b in
            a.path.utf8.count != b.path.utf8.count ? a.path.utf8.count > b.path.utf8.count : (a.name, a.value) < (b.name, b.value)
        }
        return HTTPCookie.requestHeaderFields(with: ordered)["Cookie"]
    }

    /// The path a cookie's is matched against: the URL's, percent-encoded and with its trailing `/`
    /// (`URL.path` drops both), `/` when empty. (libcurl resolves `/./` and `/../` before sending; a
    /// URL with them is matched as written.)
    static func requestPath(of url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? ""
        return path.isEmpty ? "/" : path
    }

    /// RFC 6265 §5.1.4: the cookie's path is the request's, or a prefix of it that ends in `/` or is
    /// followed by one (compared byte for byte).
    static func pathMatches(_ requestPath: String, cookie cookiePath: String) -> Bool {
        let cookiePath = cookiePath.isEmpty ? "/" : cookiePath
        guard requestPath.utf8.starts(with: cookiePath.utf8) else { return false }
        if requestPath.utf8.count == cookiePath.utf8.count || cookiePath.utf8.last == UInt8(ascii: "/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    private static func hasControlCharacter(_ text: String) -> Bool {
        text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }
}
