import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 3 — cache lookup, keyed on the request that goes on the wire (after authentication): the
/// method, the final URL without volatile parameters, the body's digest, the sensitive data and the
/// digest of every credential it carries (none of them cacheable without the policy's opt-in).
///
/// The memory tier answers at once; otherwise the file is read and checked on the cache's queue. An
/// entry stored for another version is removed; one whose `Vary` fields differ is a miss. A usable
/// entry is checked like a response from the network (stages 6 to 8, hooks included). Under
/// cache-else-load a fresh entry answers without the network; otherwise the entry may make the request
/// conditional and is the offline fallback (stage 10).
enum CacheLookupStage {
    /// What a lookup found for one attempt.
    struct Found: Sendable {
        /// What the attempt does with the cache from here (`nil` for a fresh answer, or credentials
        /// the policy doesn't let the cache see).
        let context: CacheContext?
        /// The stored response, checked.
        let stored: ResponseParts?
        /// Whether `stored` answers the send without the network.
        let fresh: Bool
    }

    /// The send's use of the cache, or `nil` when it has none: no policy, no cache configured, a body
    /// from a file or stream, a download, or a transport that doesn't say which cookies it adds.
    static func setting<R: Request>(
        for request: R, isDownload: Bool, prepared: RequestBuilder.Prepared, configuration: Configuration, policy: CachePolicy?, cookies: TransportCookies
    ) -> CacheSetting? {
        CacheStage.setting(for: request, isDownload: isDownload, prepared: prepared, configuration: configuration, policy: policy, cookies: cookies)
    }

    /// Looks `urlRequest` up and calls `answer` with what was found: at once from memory, or later
    /// from the cache's queue. `fromParts`: key it from what the builder recorded (nothing adapted the
    /// request), which is cheaper than reading the `URLRequest` back.
    static func run<R: Request>(
        _ urlRequest: URLRequest, prepared: RequestBuilder.Prepared, setting: CacheSetting, fromParts: Bool, check: ResponseCheck<R>,
        answer: @escaping @Sendable (Found) -> Void
    ) {
        let key: String?
        if fromParts, let parts = prepared.parts {
            key = CacheKey.make(for: parts, headers: prepared.mayCarryCredentialHeaders ? urlRequest.allHTTPHeaderFields : nil, setting)
        } else {
            key = CacheKey.make(for: urlRequest, setting)
        }
        guard let key else {
            // Credentials the policy doesn't let the cache see: neither served nor stored.
            answer(Found(context: nil, stored: nil, fresh: false))
            return
        }
        guard !setting.policy.ignoresCache else {
            answer(Found(context: CacheContext(setting: setting, key: key, request: urlRequest, stored: nil), stored: nil, fresh: false))
            return
        }
        let found = setting.cache.lookUp(key) { entry in
            answer(Self.found(entry, key: key, urlRequest, setting, check))
        }
        if case .now(let entry) = found { answer(Self.found(entry, key: key, urlRequest, setting, check)) }
    }

    private static func found<R: Request>(_ found: CachedEntry?, key: String, _ urlRequest: URLRequest, _ setting: CacheSetting, _ check: ResponseCheck<R>) -> Found {
        var entry = CacheStage.usable(found, key: key, for: urlRequest, setting)
        var stored: ResponseParts?
        if let usable = entry {
            if case .success(let parts) = check.entry(usable, origin: .cache) {
                stored = parts
                // Parsed here, off the sender's thread: a later hit from memory won't parse it again.
                if usable.decoded == nil { setting.cache.rememberDecoded(usable, head: parts.head.response, json: parts.json) }
            } else {
                entry = nil
            }
        }
        let fresh = stored != nil && setting.policy.mode == .cacheElseLoad && entry?.isFresh(at: Date()) == true
        // A fresh answer ends the send: nothing after reads a context, so none is made for it.
        return Found(context: fresh ? nil : CacheContext(setting: setting, key: key, request: urlRequest, stored: entry), stored: stored, fresh: fresh)
    }

    /// Attempt `number`'s request with the cache's conditional headers. From the second attempt on (an
    /// interceptor may have put a new token on it) the context is made again for its own key; the
    /// context to keep is returned with it.
    static func conditional(_ urlRequest: URLRequest, attempt number: Int, setting: CacheSetting, current: CacheContext?) -> (URLRequest, CacheContext?) {
        var context = current
        if number > 1 {
            let key = CacheKey.make(for: urlRequest, setting)
            if let key, key == current?.key, let current {
                context = CacheContext(setting: setting, key: key, request: urlRequest, stored: current.stored)
            } else {
                context = key.map { CacheContext(setting: setting, key: $0, request: urlRequest, stored: nil) }
            }
        }
        return (context.map { CacheStage.conditional(urlRequest, $0) } ?? urlRequest, context)
    }
}
