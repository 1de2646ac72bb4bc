import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The TLS trust of every host a dispatcher talks to (``Configuration/serverTrust``): a policy for all
/// hosts, policies for named hosts, and the development hosts whose invalid certificates are
/// accepted. Each hop of a send (a redirect included) is judged by the policy of the host it goes to.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration {
///     $0.transport = .curl
///     $0.serverTrust["api.example.com"] = .pinnedPublicKeys([current, backup])
///     $0.serverTrust.developmentHosts = ["dev.local"]   // a self-signed test server: never all hosts
/// }
/// ```
///
/// Host names are compared without case and without a trailing dot; an IP address is its own name
/// (`127.0.0.1`, `::1`). A policy for `example.com` does not cover `api.example.com`.
public struct ServerTrust: Sendable, Hashable {
    /// The policy of every host without one of its own. Default: ``TrustPolicy/system``.
    public var defaultPolicy: TrustPolicy
    /// The policies of named hosts (names as normalised: lower-case, no trailing dot).
    public private(set) var hostPolicies: [String: TrustPolicy]
    /// Hosts whose certificate is not checked at all (expired, self-signed, another name): for a
    /// development server only. Named one by one: a wildcard or an empty name makes every send fail
    /// with ``NetworkError/unsupportedTrustPolicy(reason:)``. Default: none.
    public var developmentHosts: Set<String>

    /// The system's CAs for every host, no development hosts.
    public static let system = ServerTrust()

    /// A setting with `defaultPolicy` for all hosts.
    public init(defaultPolicy: TrustPolicy = .system) {
        self.defaultPolicy = defaultPolicy
        hostPolicies = [:]
        developmentHosts = []
    }

    /// The policy of `host` itself (`nil`: it has none, the default applies). Setting `nil` removes it.
    public subscript(host: String) -> TrustPolicy? {
        get { hostPolicies[Self.normalized(host)] }
        set { hostPolicies[Self.normalized(host)] = newValue }
    }

    /// The policy a connection to `host` is judged by.
    public func policy(for host: String) -> TrustPolicy {
        hostPolicies[Self.normalized(host)] ?? defaultPolicy
    }

    /// Whether `host` is a development host (its certificate not checked).
    public func isDevelopmentHost(_ host: String) -> Bool {
        !developmentHosts.isEmpty && developmentHosts.contains { Self.normalized($0) == Self.normalized(host) }
    }

    /// Whether nothing differs from ``system``.
    public var isSystemDefault: Bool { defaultPolicy.isSystemDefault && hostPolicies.values.allSatisfy(\.isSystemDefault) && developmentHosts.isEmpty }

    /// Why this setting can't be used, or `nil`.
    var problem: String? {
        if let name = developmentHosts.first(where: { !Self.isOneHost($0) }) {
            return "development host \(name.debugDescription) is not one host name: name each development host"
        }
        if let name = hostPolicies.keys.sorted().first(where: { !Self.isOneHost($0) }) {
            return "a policy is set for \(name.debugDescription), which is not one host name (no port, no wildcard): it would never apply"
        }
        if let problem = defaultPolicy.problem { return "the default policy: \(problem)" }
        for (host, policy) in hostPolicies.sorted(by: { $0.key < $1.key }) {
            if let problem = policy.problem { return "the policy of \(host): \(problem)" }
        }
        return nil
    }

    /// `host` lower-cased, without brackets around an IPv6 address or a trailing dot, and an IPv4
    /// address in its dotted form (`127.1`, `0x7f.0.0.1` and `2130706433` are `127.0.0.1`, as libcurl
    /// reads them when it connects), so a policy for an address applies whichever way a URL writes it.
    static func normalized(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name.removeLast() }
        if let first = name.utf8.first, first >= 0x30, first <= 0x39, name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || $0 == 0x78 || $0 == 0x2E })
        {
            var address = in_addr()
            if inet_aton(name, &address) != 0, let text = inet_ntoa(address) { return String(cString: text) }
        }
        return name
    }

    /// Whether `name` names one host: not empty, no wildcard, port, path or white space (an IPv6
    /// address's colons excepted).
    static func isOneHost(_ name: String) -> Bool {
        let host = normalized(name)
        let refused = CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: "*/\\?#@"))
        guard !host.isEmpty, host.unicodeScalars.allSatisfy({ !refused.contains($0) }) else { return false }
        let colons = host.filter { $0 == ":" }.count
        return colons == 0 || colons >= 2  // one colon: a port
    }
}
