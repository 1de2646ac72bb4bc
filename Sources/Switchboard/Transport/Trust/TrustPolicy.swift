import Foundation

/// Whom one host's TLS connections trust, and what the client presents: seed 001's
/// `AFSecurityPolicy`, for the libcurl transport. Set per host, or for every host, in
/// ``Configuration/serverTrust``.
///
/// ```swift
/// configuration.serverTrust.defaultPolicy = .extraCAs(try TrustCertificate.certificates(pem: corporateCA))
/// configuration.serverTrust["api.example.com"] = .pinnedPublicKeys([currentPin, backupPin])
/// ```
///
/// What each check means, exactly (the libcurl transport, with OpenSSL):
/// - the chain is validated against ``anchors``: the system's CAs, the system's plus yours, or yours
///   alone (then the system's bundle and CA folder are both left out). A certificate given as an
///   anchor may be a CA or the server's own certificate: a chain that reaches any anchor is valid
///   (OpenSSL's partial chains, libcurl's default). The host name must match the certificate, and
///   every certificate must be within its validity dates;
/// - then each of ``pins`` is compared with the SHA-256 of the **leaf** certificate's
///   SubjectPublicKeyInfo (libcurl's `CURLOPT_PINNEDPUBLICKEY`): the server's own key, not a CA's
///   anywhere in the chain, as AFNetworking's public-key mode would accept. Pin the server's current
///   key and a backup key, so a new certificate with the backup key keeps working.
///
/// The URLSession transport can't apply any policy but ``system``: a send there with another policy
/// fails with ``NetworkError/unsupportedTrustPolicy(reason:)`` and nothing is sent.
public struct TrustPolicy: Sendable, Hashable, CustomStringConvertible {
    /// The certificates a server's chain must lead to.
    public enum Anchors: Sendable, Hashable {
        /// The system's CA store (libcurl's default bundle and folder).
        case system
        /// The system's CA store, and these certificates too.
        case systemAnd([TrustCertificate])
        /// These certificates alone: the system's store is not trusted at all.
        case only([TrustCertificate])
    }

    /// What the server's chain must lead to.
    public var anchors: Anchors
    /// The public keys the server's own (leaf) certificate may have; `nil`: any key. An empty list
    /// would trust no server and is refused (``NetworkError/unsupportedTrustPolicy(reason:)``).
    public var pins: [PublicKeyPin]?
    /// The certificate and key presented when the server asks for one (mutual TLS), if any.
    public var clientIdentity: ClientIdentity?

    /// A policy from its parts.
    public init(anchors: Anchors = .system, pins: [PublicKeyPin]? = nil, clientIdentity: ClientIdentity? = nil) {
        self.anchors = anchors
        self.pins = pins
        self.clientIdentity = clientIdentity
    }

    /// The system's CAs, no pins, no client certificate: the default.
    public static let system = TrustPolicy()

    /// The system's CAs and `certificates` (a private CA beside the public ones).
    public static func extraCAs(_ certificates: [TrustCertificate]) -> TrustPolicy {
        TrustPolicy(anchors: .systemAnd(certificates))
    }

    /// `certificates` alone (a private CA): the system's CAs are not trusted.
    public static func onlyCAs(_ certificates: [TrustCertificate]) -> TrustPolicy {
        TrustPolicy(anchors: .only(certificates))
    }

    /// Certificate pinning as AFNetworking means it in practice: the pinned certificates (the server's
    /// own, an intermediate or a root) are the only trust anchors. The same as ``onlyCAs(_:)``.
    public static func pinnedCertificates(_ certificates: [TrustCertificate]) -> TrustPolicy {
        TrustPolicy(anchors: .only(certificates))
    }

    /// Public-key pinning: a chain valid against `anchors` whose leaf certificate's key is one of
    /// `pins` (give a backup pin too).
    public static func pinnedPublicKeys(_ pins: [PublicKeyPin], anchors: Anchors = .system) -> TrustPolicy {
        TrustPolicy(anchors: anchors, pins: pins)
    }

    /// This policy, presenting `identity` when the server asks for a client certificate.
    public func presenting(_ identity: ClientIdentity) -> TrustPolicy {
        var policy = self
        policy.clientIdentity = identity
        return policy
    }

    /// Whether this is ``system``.
    public var isSystemDefault: Bool { self == .system }

    /// Why this policy can't be used, or `nil`: anchors or pins given as an empty list would trust
    /// nothing, or everything, which is never what was meant.
    var problem: String? {
        if let pins, pins.isEmpty { return "a pinned-key policy with no pin trusts no server" }
        switch anchors {
        case .only(let certificates) where certificates.isEmpty:
            return "`only` anchors with no certificate trust no server"
        case .systemAnd(let certificates) where certificates.isEmpty:
            return "`systemAnd` anchors with no certificate: use .system"
        default:
            return nil
        }
    }

    /// What the policy trusts, in a line (no key material).
    public var description: String {
        var parts: [String]
        switch anchors {
        case .system: parts = ["system CAs"]
        case .systemAnd(let certificates): parts = ["system CAs and \(certificates.count) more"]
        case .only(let certificates): parts = ["only \(certificates.count) given CAs"]
        }
        if let pins { parts.append("leaf key pinned to \(pins.map(\.description).joined(separator: ", "))") }
        if clientIdentity != nil { parts.append("a client certificate") }
        return parts.joined(separator: "; ")
    }
}
