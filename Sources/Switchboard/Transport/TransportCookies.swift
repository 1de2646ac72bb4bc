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
