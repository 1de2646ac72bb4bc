import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one send does with the cache: its key, its policy, the entry found, and whether the request
/// went out conditional on it.
struct CacheContext: Sendable {
    let cache: ResponseCache
    let key: String
    let policy: CachePolicy
    let appVersion: String
    /// The usable entry found before sending (fresh or stale), if any.
    let stored: CachedEntry?
    /// Whether the request carries `If-None-Match` / `If-Modified-Since` from `stored`.
    let conditional: Bool
}

/// The cache's steps in a send: where the key comes from, what is read before sending, what a 304
/// means, what is stored after, and the offline fallback.
enum CacheStage {
    /// The cache context for a send of `request` built as `prepared`, or `nil` when it doesn't use the
    /// cache: no policy, no cache configured, a body from a file or stream, a download, or credentials
    /// without the policy's opt-in. Reads the stored entry (unless the policy ignores the cache); an
    /// entry stored for another version, sensitive data or app version is removed.
    static func context<R: Request>(for request: R, prepared: RequestBuilder.Prepared, configuration: Configuration, policy: CachePolicy?) -> CacheContext? {
        guard let policy, let cache = configuration.cache, prepared.body == nil, !(request is any DownloadRequest),
            let key = key(for: prepared.urlRequest, policy: policy)
        else { return nil }
        if !policy.cachesAuthenticatedRequests, request.credentials != nil || hasAuthorization(prepared, request, configuration) {
            return nil
        }
        var stored: CachedEntry?
        if !policy.ignoresCache, let entry = cache.entry(for: key) {
            if entry.mismatch(policy, appVersion: configuration.appVersion) == nil {
                stored = entry
            } else {
                cache.remove(key: key)
            }
        }
        let conditional = stored.map { $0.etag != nil || $0.lastModified != nil } ?? false
        return CacheContext(cache: cache, key: key, policy: policy, appVersion: configuration.appVersion, stored: stored, conditional: conditional)
    }

    /// Whether the request carries an `Authorization` header: from our own header lists when we built
    /// it (Foundation's header lookup costs microseconds on Linux), from the `URLRequest` when the
    /// request made its own.
    private static func hasAuthorization<R: Request>(_ prepared: RequestBuilder.Prepared, _ request: R, _ configuration: Configuration) -> Bool {
        if prepared.isCustom { return prepared.urlRequest.value(forHTTPHeaderField: "Authorization") != nil }
        return request.headers["Authorization"] != nil || configuration.defaultHeaders["Authorization"] != nil
    }

    /// The key: the method, the final URL (after base URL, CDN and URL filters) without the
    /// policy's volatile parameters, the body, and the sensitive data. `nil` when the body can't be
    /// part of a key.
    static func key(for urlRequest: URLRequest, policy: CachePolicy) -> String? {
        guard let url = urlRequest.url else { return nil }
        var text = urlRequest.httpMethod ?? "GET"
        text += " " + without(policy.volatileParameters, in: url)
        if let body = urlRequest.httpBody, !body.isEmpty {
            let isForm = urlRequest.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("application/x-www-form-urlencoded") == true
            if isForm, !policy.volatileParameters.isEmpty, let form = String(data: body, encoding: .utf8) {
                text += "\nform " + form.split(separator: "&").filter { !policy.volatileParameters.contains(decodedName(of: $0)) }.joined(separator: "&")
            } else {
                text += "\nbody " + StableHash.hex(String(decoding: body, as: UTF8.self)) + ":\(body.count)"
            }
        }
        if let sensitive = policy.sensitiveData { text += "\nsensitive " + sensitive }
        return text
    }

    private static func without(_ names: Set<String>, in url: URL) -> String {
        guard !names.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: false), let items = components.percentEncodedQueryItems else {
            return url.absoluteString
        }
        let kept = items.filter { !names.contains($0.name.removingPercentEncoding ?? $0.name) }
        components.percentEncodedQueryItems = kept.isEmpty ? nil : kept
        return components.url?.absoluteString ?? url.absoluteString
    }

    private static func decodedName(of pair: Substring) -> String {
        let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
        return name.removingPercentEncoding ?? name
    }

    /// `prepared` with the entry's validators as conditional headers, when the context says so.
    static func conditional(_ prepared: RequestBuilder.Prepared, _ context: CacheContext) -> RequestBuilder.Prepared {
        guard context.conditional, let entry = context.stored else { return prepared }
        var request = prepared.urlRequest
        if let etag = entry.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        if let date = entry.lastModified { request.setValue(date, forHTTPHeaderField: "If-Modified-Since") }
        return RequestBuilder.Prepared(urlRequest: request, isCustom: prepared.isCustom, body: prepared.body, temporaryFile: prepared.temporaryFile)
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

    /// Stores a successful response from the network (or a revalidation) unless it says `no-store`.
    static func store(_ response: ResponseParts, _ context: CacheContext) {
        let httpResponse = response.head.response
        let control = httpResponse.value(forHTTPHeaderField: "Cache-Control")?.lowercased() ?? ""
        guard !control.contains("no-store") else {
            context.cache.remove(key: context.key)
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in httpResponse.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        let now = Date()
        var entry = CachedEntry(
            key: context.key, url: httpResponse.url?.absoluteString ?? "", statusCode: response.head.statusCode, headers: headers,
            storedAt: now, expiresAt: now.addingTimeInterval(max(0, context.policy.timeToLive)), version: context.policy.version,
            sensitiveData: context.policy.sensitiveData, appVersion: context.appVersion
        )
        entry.body = response.data
        entry.decoded = CachedEntry.Decoded(head: httpResponse, json: response.json)
        context.cache.store(entry)
    }

    /// Whether `error` is the network failing (what the offline fallback answers), not the server
    /// answering badly.
    static func isNetworkFailure(_ error: NetworkError) -> Bool {
        switch error {
        case .transport, .timedOut, .idleTimeout: true
        default: false
        }
    }
}
