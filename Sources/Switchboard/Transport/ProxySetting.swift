import Foundation

/// How requests reach their servers (``Configuration/proxy``): straight, through the proxy the
/// environment names (the default), or through an HTTP proxy the app names.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration {
///     $0.transport = .curl
///     $0.proxy = .http(HTTPProxy(host: "proxy.corp", port: 3128, credentials: Credentials(user: "me", password: "secret")))
/// }
/// ```
///
/// The libcurl transport applies every setting. The URLSession transport can't be told a proxy on
/// Linux (FoundationNetworking reads the environment on its own and ignores
/// `connectionProxyDictionary`): there ``http(_:)`` fails every send with
/// ``NetworkError/proxyFailed(reason:)``, and so does ``none`` while a proxy variable is set, since
/// it could not be honoured. Nothing is ever sent another way than the one asked for.
public enum ProxySetting: Sendable, Hashable {
    /// Every request goes straight to its server; the environment's proxy variables are ignored.
    case none
    /// The proxy the environment names, read when the transport is made (a later change of the
    /// environment applies to the next transport): `http_proxy` for http, in lower case only (the
    /// upper-case `HTTP_PROXY` can come from a request header in a CGI-like process: the "httpoxy"
    /// rule); `https_proxy` or `HTTPS_PROXY` for https; `all_proxy` or `ALL_PROXY` for either when
    /// the one for its scheme is not set; `no_proxy` or `NO_PROXY` for the hosts that go straight.
    /// User info in a proxy's URL is its credentials.
    case environment
    /// An HTTP proxy: http requests are sent to it, https requests go through it in a `CONNECT` tunnel
    /// (TLS end to end with the server).
    case http(HTTPProxy)
}

/// An HTTP proxy named by the app (``ProxySetting/http(_:)``).
public struct HTTPProxy: Sendable, Hashable, CustomStringConvertible {
    /// The proxy's host name or IP address.
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The credentials sent to the proxy (`Proxy-Authorization: Basic`), if it asks for some. Never
    /// logged, never shown in a description.
    public var credentials: Credentials?
    /// The hosts that go straight, in `no_proxy`'s form: a host name matches itself and its
    /// subdomains (`example.com`, `.example.com`), an IP address itself, `*` every host.
    public var bypass: [String]

    /// A proxy at `host`:`port`.
    public init(host: String, port: Int, credentials: Credentials? = nil, bypass: [String] = []) {
        self.host = host
        self.port = port
        self.credentials = credentials
        self.bypass = bypass
    }

    /// `http://host:port`, with the user's name but never the password.
    public var description: String {
        let user = credentials.map { "\($0.user):***@" } ?? ""
        return "http://\(user)\(host):\(port)"
    }
}

/// The proxy a transport sends each request through: a ``ProxySetting`` with the environment read
/// once, so every transfer of one transport is routed alike.
struct ProxyRoutes: Sendable, Hashable {
    /// A proxy: its URL as libcurl takes it (no user info) and its credentials.
    struct Proxy: Sendable, Hashable {
        let url: String
        let credentials: Credentials?
        /// `host:port`, for messages.
        let address: String
    }

    /// How requests of one scheme go.
    enum Route: Sendable, Hashable {
        case direct
        case through(Proxy)
        /// The setting names a proxy that can't be used (another scheme, no host): nothing is sent,
        /// rather than sending straight where a proxy was asked for.
        case unusable(String)
    }

    let http: Route
    let https: Route
    /// `no_proxy`'s entries, lower-cased, without leading dots.
    let bypass: [String]

    /// The routes of `setting`, reading proxy variables from `environment`.
    init(_ setting: ProxySetting, environment: [String: String] = ProcessInfo.processInfo.environment) {
        switch setting {
        case .none:
            http = .direct
            https = .direct
            bypass = []
        case .http(let proxy):
            let route = Route.through(
                Proxy(url: "http://\(Self.bracketed(proxy.host)):\(proxy.port)", credentials: proxy.credentials, address: "\(proxy.host):\(proxy.port)"))
            http = route
            https = route
            bypass = Self.entries(proxy.bypass)
        case .environment:
            func named(_ names: String...) -> (name: String, value: String)? {
                names.lazy.compactMap { name in environment[name].map { (name, $0) } }.first { !$0.value.isEmpty }
            }
            let all = named("all_proxy", "ALL_PROXY")
            // Never HTTP_PROXY (httpoxy): in a CGI-like process it is the request's `Proxy` header.
            http = (named("http_proxy") ?? all).map(Self.route) ?? .direct
            https = (named("https_proxy", "HTTPS_PROXY") ?? all).map(Self.route) ?? .direct
            bypass = Self.entries((named("no_proxy", "NO_PROXY")?.value ?? "").split(separator: ",").map(String.init))
        }
    }

    /// Whether requests may go through a proxy at all (or are refused for an unusable one).
    var usesProxy: Bool { http != .direct || https != .direct }

    /// How a request to `url` goes.
    func route(for url: URL) -> Route {
        let route = url.scheme?.lowercased() == "https" ? https : http
        guard route != .direct, let host = url.host.map(ServerTrust.normalized), bypasses(host) else { return route }
        return .direct
    }

    /// Whether `host` (normalised) goes straight: `*`, the entry itself, or a subdomain of it.
    func bypasses(_ host: String) -> Bool {
        bypass.contains { entry in entry == "*" || host == entry || host.hasSuffix("." + entry) }
    }

    private static func entries(_ list: [String]) -> [String] {
        list.map { entry in
            var name = ServerTrust.normalized(entry.trimmingCharacters(in: .whitespaces))
            while name.hasPrefix(".") { name.removeFirst() }
            if name.hasPrefix("*.") { name.removeFirst(2) }
            return name
        }.filter { !$0.isEmpty }
    }

    /// The route a variable names (`http://user:pass@host:port`, or `host:port`): unusable when it
    /// names no host, or a scheme other than http (an https or SOCKS proxy is not supported).
    static func route(_ variable: (name: String, value: String)) -> Route {
        let text = variable.value.contains("://") ? variable.value : "http://" + variable.value
        guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty else {
            return .unusable("\(variable.name) names no proxy host")
        }
        guard components.scheme?.lowercased() == "http" else {
            return .unusable("\(variable.name) names a \(components.scheme ?? "") proxy; only http proxies are supported")
        }
        let port = components.port ?? 80
        let credentials = components.user.map {
            Credentials(user: $0.removingPercentEncoding ?? $0, password: (components.password ?? "").removingPercentEncoding ?? "")
        }
        return .through(Proxy(url: "http://\(bracketed(host)):\(port)", credentials: credentials, address: "\(host):\(port)"))
    }

    private static func bracketed(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }
}
