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
    /// `nil` when there are none to send.
    ///
    /// A cookie whose name or value holds a CR, LF or NUL is left out, the others go: sent, it would
    /// end the `Cookie` line and add fields of its own to the request. The app can store one
    /// (`HTTPCookie(properties:)` takes any value on Linux), and so can a server (a bare CR inside a
    /// `Set-Cookie` line). The same rule as for a request's own fields (``HTTPHeaders``).
    static func field(from jar: HTTPCookieStorage, for url: URL) -> String? {
        guard let cookies = jar.cookies(for: url), !cookies.isEmpty else { return nil }
        let sendable = cookies.filter { !breaksLine($0.name) && !breaksLine($0.value) }
        guard !sendable.isEmpty else { return nil }
        return HTTPCookie.requestHeaderFields(with: sendable)["Cookie"]
    }

    private static func breaksLine(_ text: String) -> Bool {
        text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
}
