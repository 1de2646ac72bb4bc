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
    /// - Parameter headersMayHaveCredentials: `false` when the request's header fields are known to hold
    ///   none of `Authorization`, `Proxy-Authorization` and `Cookie` (they are then not looked at).
    static func make(for urlRequest: URLRequest, _ setting: CacheSetting, headersMayHaveCredentials: Bool = true) -> String? {
        guard var text = withoutCredentials(urlRequest, policy: setting.policy) else { return nil }
        if let credentials = credentialMaterial(of: urlRequest, setting, headers: headersMayHaveCredentials) {
            guard setting.policy.cachesAuthenticatedRequests else { return nil }
            text += "\nauth " + SHA256.hex(credentials)
        }
        return text
    }

    /// What every key starts with. Keys made before the cache was read after the adapters (version 1,
    /// which left out the tokens they added) began with the method: none of them is found now.
    static let version = "v2 "

    /// The key without credentials: method, URL (without its user info, which the credentials' hash
    /// stands for), body, sensitive data. `nil` without a URL.
    static func withoutCredentials(_ urlRequest: URLRequest, policy: CachePolicy) -> String? {
        guard let url = urlRequest.url else { return nil }
        var text = version + (urlRequest.httpMethod ?? "GET")
        text += " " + without(policy.volatileParameters, in: withoutUserInfo(url))
        if let body = urlRequest.httpBody, !body.isEmpty {
            let isForm = urlRequest.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("application/x-www-form-urlencoded") == true
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

    /// Every credential `urlRequest` carries, each part length-prefixed (so no two sets of values
    /// encode alike), or `nil` when it carries none.
    static func credentialMaterial(of urlRequest: URLRequest, _ setting: CacheSetting, headers: Bool = true) -> [UInt8]? {
        var material: [UInt8] = []
        func add(_ label: String, _ value: String) {
            for part in [label, value] {
                material.append(contentsOf: Array("\(part.utf8.count):".utf8))
                material.append(contentsOf: Array(part.utf8))
            }
        }
        // One copy of the fields, compared as ASCII (each Foundation lookup costs microseconds on Linux).
        if headers, let fields = urlRequest.allHTTPHeaderFields, !fields.isEmpty {
            for name in ["Authorization", "Proxy-Authorization", "Cookie"] {
                if let field = fields.first(where: { $0.key.caseInsensitiveEquals(name) }) { add(name, field.value) }
            }
        }
        if let url = urlRequest.url {
            if let user = url.user { add("url user", user) }
            if let password = url.password { add("url password", password) }
            // The cookies the transport will add (it adds none when the request sets its own, which
            // is counted above; counting the jar's as well only makes the key stricter).
            // An empty jar is the usual case, and asking it for all its cookies is cheaper than for a
            // URL's (which parses the host).
            if urlRequest.httpShouldHandleCookies, let jar = setting.jar, jar.cookies?.isEmpty == false, let cookies = jar.cookies(for: url), !cookies.isEmpty {
                add("jar", HTTPCookie.requestHeaderFields(with: cookies)["Cookie"] ?? "")
            }
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
