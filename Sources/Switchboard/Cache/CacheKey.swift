import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The key a response is stored under: made from the request as it goes on the wire, after the
/// adapters and interceptors, so that a token they add is part of it.
enum CacheKey {
    /// The key of `urlRequest`: the method, the URL (after base URL, CDN, URL filters and adapters)
    /// without the policy's volatile parameters, a hash of the body's bytes, the sensitive data, and a
    /// SHA-256 of every credential the request carries. `nil` when the request can't use the cache: it
    /// has no URL, or it carries credentials (`Authorization`, `Proxy-Authorization`, a `Cookie` of its
    /// own or from the transport's jar, user info in the URL, or ``Request/credentials``) and the
    /// policy doesn't allow caching them.
    static func make(for urlRequest: URLRequest, _ setting: CacheSetting) -> String? {
        guard let parts = Parts(urlRequest) else { return nil }
        return make(for: parts, headers: urlRequest.allHTTPHeaderFields, setting)
    }

    /// The key of a request made of `parts`, whose header fields are `headers` (`nil` when they are
    /// known to hold no credential).
    static func make(for parts: Parts, headers: [String: String]?, _ setting: CacheSetting) -> String? {
        var text = withoutCredentials(parts, policy: setting.policy)
        if let credentials = credentialMaterial(of: parts, headers: headers, setting) {
            guard setting.policy.cachesAuthenticatedRequests else { return nil }
            text += "\nauth " + SHA256.hex(credentials)
        }
        return text
    }

    /// What a key is made of, read once: from a `URLRequest`, or from what the request builder put on
    /// the one it made (each read of a `URLRequest`'s field is a call into Foundation's object on Linux).
    struct Parts: Sendable {
        let url: URL
        let method: String
        let body: Data?
        let contentType: String?
        /// `httpShouldHandleCookies`: whether the transport adds the jar's cookies.
        let handlesCookies: Bool
    }

    /// What every key starts with. Keys made before the cache was read after the adapters (version 1,
    /// which left out the tokens they added) began with the method: none of them is found now.
    static let version = "v2 "

    /// The key without credentials: method, URL (without its user info, which the credentials' hash
    /// stands for), body, sensitive data.
    private static func withoutCredentials(_ parts: Parts, policy: CachePolicy) -> String {
        let url = without(policy.volatileParameters, in: withoutUserInfo(parts.url))
        var text = ""
        // One allocation for the usual key (no body), not one per piece.
        text.reserveCapacity(version.utf8.count + parts.method.utf8.count + 1 + url.utf8.count)
        text += version
        text += parts.method
        text += " "
        text += url
        if let body = parts.body, !body.isEmpty {
            let isForm = parts.contentType?.hasPrefix("application/x-www-form-urlencoded") == true
            if isForm, !policy.volatileParameters.isEmpty, let form = String(data: body, encoding: .utf8) {
                text += "\nform " + form.split(separator: "&").filter { !policy.volatileParameters.contains(decodedName(of: $0)) }.joined(separator: "&")
            } else {
                // The bytes, not a string made of them: invalid UTF-8 would become U+FFFD, and bodies
                // that differ would share a key.
                text += "\nbody " + SHA256.hex(body) + ":\(body.count)"
            }
        }
        if let sensitive = policy.sensitiveData { text += "\nsensitive " + sensitive }
        return text
    }

    /// Every credential a request made of `parts` with header fields `fields` carries, each part
    /// length-prefixed (so no two sets of values encode alike), or `nil` when it carries none.
    private static func credentialMaterial(of parts: Parts, headers fields: [String: String]?, _ setting: CacheSetting) -> [UInt8]? {
        var material: [UInt8] = []
        func add(_ label: String, _ value: String) {
            for part in [label, value] {
                material.append(contentsOf: Array("\(part.utf8.count):".utf8))
                material.append(contentsOf: Array(part.utf8))
            }
        }
        // One copy of the fields, compared as ASCII (each Foundation lookup costs microseconds on Linux).
        if let fields, !fields.isEmpty {
            for name in HTTPHeaders.credentialNames {
                if let field = fields.first(where: { $0.key.caseInsensitiveEquals(name) }) { add(name, field.value) }
            }
        }
        let url = parts.url
        if let user = url.user { add("url user", user) }
        if let password = url.password { add("url password", password) }
        // The cookies the transport will add, as it adds them (``TransportCookies/field(from:for:now:)``:
        // the ones its path, scheme and expiry allow, in a fixed order). It adds none when the request
        // sets its own, which is counted above; counting the jar's as well only makes the key stricter.
        if parts.handlesCookies, let jar = setting.jar, let field = TransportCookies.field(from: jar, for: url) {
            add("jar", field)
        }
        if let credentials = setting.credentials {
            add("user", credentials.user)
            add("password", credentials.password)
        }
        return material.isEmpty ? nil : material
    }

    /// `url` without a user name or password (kept out of keys and stored entries: the key has their
    /// hash).
    static func withoutUserInfo(_ url: URL) -> URL {
        guard url.user != nil || url.password != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.user = nil
        components.password = nil
        return components.url ?? url
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
}

extension CacheKey.Parts {
    /// `nil` without a URL.
    init?(_ urlRequest: URLRequest) {
        guard let url = urlRequest.url else { return nil }
        let body = urlRequest.httpBody
        self.init(
            url: url, method: urlRequest.httpMethod ?? "GET", body: body,
            contentType: body.map { _ in urlRequest.value(forHTTPHeaderField: "Content-Type") } ?? nil,
            handlesCookies: urlRequest.httpShouldHandleCookies)
    }
}
