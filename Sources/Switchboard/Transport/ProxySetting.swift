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
/// it could not be honoured. On Apple platforms (written for, not built or tested in this project's
/// CI) the URLSession transport applies only ``environment``, as the system's proxy settings; ``none``
/// and ``http(_:)`` fail every send there. A request never goes another way than the one asked for: a
/// proxy that can't be used fails the send rather than let it go straight.
public enum ProxySetting: Sendable, Hashable {
    /// Every request goes straight to its server; the environment's proxy variables are ignored.
    case none
    /// The proxy the environment names, read when the transport is made (a later change of the
    /// environment applies to the next transport): `http_proxy` for http, in lower case only (the
    /// upper-case `HTTP_PROXY` can come from a request header in a CGI-like process: the "httpoxy"
    /// rule); `https_proxy` or `HTTPS_PROXY` for https; `all_proxy` or `ALL_PROXY` for either when
    /// the one for its scheme is not set (set but empty: none); `no_proxy` or `NO_PROXY` for the hosts
    /// that go straight (`*` alone for all; names with their subdomains; addresses exactly, or
    /// `a.b.c.d/n` ranges; commas or spaces between). User info in a proxy's URL is its credentials.
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
    /// subdomains (`example.com`, `.example.com`), an IP address itself, `a.b.c.d/n` a range, and
    /// `["*"]` every host.
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

extension HTTPProxy: CustomReflectable {
    /// Host, port, user and bypass list: `dump` and debuggers never show the password.
    public var customMirror: Mirror {
        Mirror(self, children: ["host": host, "port": port, "user": credentials?.user as Any, "bypass": bypass], displayStyle: .struct)
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
            // The first variable that is set; one set empty means none (libcurl reads it so too).
            func named(_ names: String...) -> (name: String, value: String)? {
                names.lazy.compactMap { name in environment[name].map { (name, $0) } }.first
            }
            func route(_ variable: (name: String, value: String)?) -> Route {
                guard let variable, !variable.value.isEmpty else { return .direct }
                return Self.route(variable)
            }
            let all = named("all_proxy", "ALL_PROXY")
            // Never HTTP_PROXY (httpoxy): in a CGI-like process it is the request's `Proxy` header.
            http = route(named("http_proxy") ?? all)
            https = route(named("https_proxy", "HTTPS_PROXY") ?? all)
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

    /// Whether `host` (normalised) goes straight: the list is `*` alone; an address equal to an
    /// address entry or inside a `a.b.c.d/n` range; a name equal to a name entry or a subdomain of it.
    func bypasses(_ host: String) -> Bool {
        if bypass == ["*"] { return true }
        let address = Self.ipv4(host)
        return bypass.contains { entry in
            if let range = Self.range(entry) { return address.map { $0 & range.mask == range.network } ?? false }
            if address != nil || host.contains(":") { return host == entry }  // an address: exactly
            return host == entry || host.hasSuffix("." + entry)
        }
    }

    /// The entries of a list in `no_proxy`'s form (commas or white space between them).
    private static func entries(_ list: [String]) -> [String] {
        list.flatMap { $0.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) }.map { entry in
            var name = String(entry)
            if !name.contains("/") { name = ServerTrust.normalized(name) }
            while name.hasPrefix(".") { name.removeFirst() }
            if name.hasPrefix("*.") { name.removeFirst(2) }
            return name.lowercased()
        }.filter { !$0.isEmpty }
    }

    /// A dotted IPv4 address as a number.
    private static func ipv4(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard let byte = UInt8(part) else { return nil }
            value = value << 8 | UInt32(byte)
        }
        return value
    }

    /// An IPv4 range `a.b.c.d/n`: its network and mask.
    private static func range(_ entry: String) -> (network: UInt32, mask: UInt32)? {
        let parts = entry.split(separator: "/")
        guard parts.count == 2, let address = ipv4(String(parts[0])), let bits = Int(parts[1]), (0...32).contains(bits) else { return nil }
        let mask: UInt32 = bits == 0 ? 0 : UInt32.max << (32 - bits)
        return (address & mask, mask)
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
