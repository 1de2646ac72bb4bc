import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Dispatcher {
    /// The stored response for `request`, without sending it: YTKNetwork's `cacheJson` and
    /// `loadCacheWithError`. `nil` when the request has no ``Request/cachePolicy``, the cache is off,
    /// nothing is stored, the entry was stored for another version, sensitive data or app version, or
    /// the request differs from the stored one in a field the response's `Vary` named.
    ///
    /// The request is looked up as a send would make it before its interceptors run: built and adapted
    /// by the ``RequestAdapter``s (an ``RequestInterceptor``'s changes, such as an
    /// ``AuthenticationInterceptor``'s token, are asynchronous and not applied here, so an entry keyed by
    /// them is not found). A request carrying credentials is found only with
    /// ``CachePolicy/cachesAuthenticatedRequests``. Reads the disk on the calling thread when the entry
    /// is not in memory. The entry is validated as a send's would be (status, content type, JSON shape);
    /// the ``ResponseHook``s don't run on it (it answers no send).
    ///
    /// ```swift
    /// if let cached = Dispatcher.shared.cachedResponse(for: GetUserInfo(id: "1")) { show(cached.json) }
    /// ```
    /// - Parameters:
    ///   - request: the request.
    ///   - allowingExpired: whether an entry past its time to live counts (default `true`).
    /// - Returns: the response, with ``Response/source`` ``Response/Source/cache``.
    public func cachedResponse<R: Request>(for request: R, allowingExpired: Bool = true) -> Response<R>? {
        var reading = request.cachePolicy
        reading?.ignoresCache = false
        guard let (setting, key, urlRequest) = cacheTarget(of: request, policy: reading),
            let entry = CacheStage.usable(setting.cache.entry(for: key), key: key, for: urlRequest, setting),
            allowingExpired || entry.isFresh(at: Date()),
            let transported = CacheStage.transportResponse(entry)
        else { return nil }
        let check = ResponseCheck(request: request, configuration: configuration, hooks: [])
        return try? check.validate(transported, origin: .cache, parsed: entry.decoded?.json).map { Response(request: request, parts: $0) }.get()
    }

    /// Removes the stored response for `request` (its key: method, final URL, body, sensitive data,
    /// and the credentials it carries; see ``cachedResponse(for:allowingExpired:)`` for which request
    /// that is).
    public func removeCachedResponse<R: Request>(for request: R) {
        guard let (setting, key, _) = cacheTarget(of: request, policy: request.cachePolicy) else { return }
        setting.cache.remove(key: key)
    }

    /// The cache setting, key and final request of `request` as a send would make them before its
    /// interceptors run: built, then adapted by the request adapters.
    private func cacheTarget<R: Request>(of request: R, policy: CachePolicy?) -> (CacheSetting, String, URLRequest)? {
        let settings = settings
        guard policy != nil, let prepared = try? RequestBuilder.prepare(request, body: request.body, configuration: settings),
            let urlRequest = try? RequestBuilder.adapt(prepared, for: request, configuration: settings),
            let setting = CacheStage.setting(
                for: request, isDownload: request is any DownloadRequest, prepared: prepared, configuration: settings.value, policy: policy, cookies: cookiesForCache),
            let key = CacheKey.make(for: urlRequest, setting)
        else { return nil }
        return (setting, key, urlRequest)
    }
}
