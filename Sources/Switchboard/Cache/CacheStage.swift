import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a send's use of the cache is decided from before its final request is known: the cache, the
/// policy, and where the credentials the request will carry come from.
/// A class: it is passed along the whole lookup, and one reference is cheaper to copy than its fields.
final class CacheSetting: Sendable {
    let cache: ResponseCache
    let policy: CachePolicy
    let appVersion: String
    /// The request's ``Request/credentials``.
    let credentials: Credentials?
    /// The jar the transport adds cookies from, if any.
    let jar: HTTPCookieStorage?

    init(cache: ResponseCache, policy: CachePolicy, appVersion: String, credentials: Credentials?, jar: HTTPCookieStorage?) {
        self.cache = cache
        self.policy = policy
        self.appVersion = appVersion
        self.credentials = credentials
        self.jar = jar
    }
}

/// What one send does with the cache: its setting, the key of the request that goes on the wire, the
/// entry found for it, and whether the request went out conditional on it. A class, for the same
/// reason as ``CacheSetting``.
final class CacheContext: Sendable {
    let setting: CacheSetting
    let key: String
    /// The attempt's final request (after adapters and interceptors): what `Vary` is read against.
    let request: URLRequest
    /// The usable entry found before sending (fresh or stale), if any.
    let stored: CachedEntry?

    init(setting: CacheSetting, key: String, request: URLRequest, stored: CachedEntry?) {
        self.setting = setting
        self.key = key
        self.request = request
        self.stored = stored
    }

    /// Whether the request carries `If-None-Match` / `If-Modified-Since` from `stored`: when it has
    /// either. Asked only when the request goes out (a fresh hit never looks at the headers).
    var conditional: Bool { stored.map { $0.etag != nil || $0.lastModified != nil } ?? false }

    var cache: ResponseCache { setting.cache }
    var policy: CachePolicy { setting.policy }
}

/// The cache's steps in a send: whether it may use the cache, which stored entry may answer its final
/// request, what a 304 means, what is stored after, and the offline fallback. The cache is consulted
/// after the adapters and interceptors have run, against the request that goes on the wire
/// (``CacheKey``).
enum CacheStage {
    /// The cache setting for a send of `request` built as `prepared`, on a transport that adds
    /// `cookies`, or `nil` when it doesn't use the cache: no policy, no cache configured, a body from a
    /// file or stream, a download, or a transport that doesn't say which cookies it adds.
    static func setting<R: Request>(
        for request: R, isDownload: Bool, prepared: RequestBuilder.Prepared, configuration: Configuration, policy: CachePolicy?, cookies: TransportCookies
    ) -> CacheSetting? {
        guard let policy, let cache = configuration.cache, prepared.body == nil, !isDownload else { return nil }
        if case .unknown = cookies { return nil }
        return CacheSetting(cache: cache, policy: policy, appVersion: configuration.appVersion, credentials: request.credentials, jar: cookies.jar)
    }

    /// Which of `entry` (found under `key`) may answer `urlRequest`: `nil` when there is none, it was
    /// stored for another version, sensitive data or app version (then it is removed), or the request
    /// differs from the storing one in a field the response's `Vary` named (then it stays: another
    /// variant, replaced when this request's answer is stored).
    static func usable(_ entry: CachedEntry?, key: String, for urlRequest: URLRequest, _ setting: CacheSetting) -> CachedEntry? {
        guard let entry else { return nil }
        if entry.mismatch(setting.policy, appVersion: setting.appVersion) != nil {
            setting.cache.remove(key: key)
            return nil
        }
        return entry.varies(from: urlRequest) ? nil : entry
    }

    /// The context of an attempt whose final request is `urlRequest`, keyed `key`, with `stored` found
    /// for it.
    static func context(_ setting: CacheSetting, key: String, request urlRequest: URLRequest, stored: CachedEntry?) -> CacheContext {
        CacheContext(setting: setting, key: key, request: urlRequest, stored: stored)
    }

    /// `urlRequest` with the stored entry's validators as conditional headers, when the context says so.
    static func conditional(_ urlRequest: URLRequest, _ context: CacheContext) -> URLRequest {
        guard context.conditional, let entry = context.stored else { return urlRequest }
        var request = urlRequest
        if let etag = entry.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        if let date = entry.lastModified { request.setValue(date, forHTTPHeaderField: "If-Modified-Since") }
        return request
    }

    /// What the transport answered, with a 304 to a conditional request turned into the stored
    /// response (its headers updated by the 304's); `nil` when it isn't such a 304.
    static func revalidated(_ response: TransportResponse, _ context: CacheContext?) -> TransportResponse? {
        guard let context, context.conditional, let entry = context.stored, response.httpResponse.statusCode == 304 else { return nil }
        var headers = entry.headers
        for (name, value) in response.httpResponse.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            // The 304's validators and freshness replace the stored ones; its framing does not.
            guard !["content-length", "transfer-encoding", "content-encoding", "connection"].contains(name.lowercased()) else { continue }
            if let old = headers.keys.first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) { headers[old] = nil }
            headers[name] = value
        }
        guard let url = response.httpResponse.url ?? URL(string: entry.url),
            let head = HTTPURLResponse(url: url, statusCode: entry.statusCode, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return nil }
        return TransportResponse(httpResponse: head, data: entry.body, timing: response.timing)
    }

    /// The stored entry as a transport response (for a cache hit or the offline fallback).
    static func transportResponse(_ entry: CachedEntry) -> TransportResponse? {
        if let decoded = entry.decoded {
            return TransportResponse(httpResponse: decoded.head, data: entry.body, timing: Timing(start: Date(), timeToFirstByte: 0, duration: 0))
        }
        guard let url = URL(string: entry.url),
            let head = HTTPURLResponse(url: url, statusCode: entry.statusCode, httpVersion: "HTTP/1.1", headerFields: entry.headers)
        else { return nil }
        return TransportResponse(httpResponse: head, data: entry.body, timing: Timing(start: Date(), timeToFirstByte: 0, duration: 0))
    }

    /// Stores a successful response from the network (or a revalidation) unless it says `no-store` or
    /// `Vary: *` (which no later request matches), with the values the fields its `Vary` names had in
    /// the request that got it.
    static func store(_ response: ResponseParts, _ context: CacheContext) {
        let httpResponse = response.head.response
        let control = httpResponse.value(forHTTPHeaderField: "Cache-Control")?.lowercased() ?? ""
        let varied = varyNames(of: httpResponse)
        guard !control.contains("no-store"), !varied.contains("*") else {
            context.cache.remove(key: context.key)
            return
        }
        var headers: [String: String] = [:]
        var setsCookies = false
        for (name, value) in httpResponse.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            // A `Set-Cookie` is the session of whoever got the response: never kept for a later one.
            if name.caseInsensitiveEquals("Set-Cookie") || name.caseInsensitiveEquals("Set-Cookie2") {
                setsCookies = true
                continue
            }
            headers[name] = value
        }
        var head = httpResponse
        if setsCookies, let url = httpResponse.url,
            let withoutCookies = HTTPURLResponse(url: url, statusCode: httpResponse.statusCode, httpVersion: "HTTP/1.1", headerFields: headers)
        {
            head = withoutCookies
        }
        let now = Date()
        let entry = CachedEntry(
            key: context.key, url: httpResponse.url.map { CacheKey.withoutUserInfo($0).absoluteString } ?? "", statusCode: response.head.statusCode, headers: headers,
            storedAt: now, expiresAt: now.addingTimeInterval(max(0, context.policy.timeToLive)), version: context.policy.version,
            sensitiveData: context.policy.sensitiveData, appVersion: context.setting.appVersion,
            vary: varied.isEmpty ? nil : varied.map { CachedEntry.VaryField(name: $0, value: context.request.value(forHTTPHeaderField: $0)) },
            body: response.data, decoded: response.parsed.map { CachedEntry.Decoded(head: head, json: $0) }
        )
        context.cache.store(entry)
    }

    /// The lower-cased field names of the response's `Vary` (its fields joined, comma-separated).
    static func varyNames(of response: HTTPURLResponse) -> [String] {
        guard let value = response.value(forHTTPHeaderField: "Vary") else { return [] }
        var names: [String] = []
        for part in value.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces).lowercased()
            if !name.isEmpty, !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// Whether `error` is the network failing (what the offline fallback answers), not the server
    /// answering badly.
    static func isNetworkFailure(_ error: NetworkError) -> Bool {
        switch error {
        case .transport, .timedOut, .idleTimeout: true
        default: false
        }
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
        return (context.map { conditional(urlRequest, $0) } ?? urlRequest, context)
    }
}
