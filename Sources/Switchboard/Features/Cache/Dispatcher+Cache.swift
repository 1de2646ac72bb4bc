import Foundation

extension Dispatcher {
    /// The stored response for `request`, without sending it: YTKNetwork's `cacheJson` and
    /// `loadCacheWithError`. `nil` when the request has no ``Request/cachePolicy``, the cache is off,
    /// nothing is stored, or the entry was stored for another version, sensitive data or app version.
    ///
    /// ```swift
    /// if let cached = Dispatcher.shared.cachedResponse(for: GetUserInfo(id: "1")) { show(cached.json) }
    /// ```
    /// - Parameters:
    ///   - request: the request.
    ///   - allowingExpired: whether an entry past its time to live counts (default `true`).
    /// - Returns: the response, with ``Response/source`` ``Response/Source/cache``.
    public func cachedResponse<R: Request>(for request: R, allowingExpired: Bool = true) -> Response<R>? {
        let configuration = configuration
        guard let policy = request.cachePolicy, let prepared = try? RequestBuilder.prepare(request, body: request.body, configuration: configuration) else { return nil }
        var reading = policy
        reading.ignoresCache = false
        guard let context = CacheStage.context(for: request, prepared: prepared, configuration: configuration, policy: reading),
            let entry = context.stored, allowingExpired || entry.isFresh(at: Date()),
            let transported = CacheStage.transportResponse(entry)
        else { return nil }
        return try? ResponseValidator.validate(transported, for: request, configuration: configuration, origin: .cache).map { Response(request: request, parts: $0) }.get()
    }

    /// Removes the stored response for `request` (its key: method, final URL, body, sensitive data).
    public func removeCachedResponse<R: Request>(for request: R) {
        let configuration = configuration
        guard let policy = request.cachePolicy, let cache = configuration.cache,
            let prepared = try? RequestBuilder.prepare(request, body: request.body, configuration: configuration),
            let key = CacheStage.key(for: prepared.urlRequest, policy: policy)
        else { return }
        cache.remove(key: key)
    }
}
