import Foundation

/// Why a TLS connection was refused under the host's ``TrustPolicy``
/// (``NetworkError/serverTrustFailed(_:)``): the host, the check that failed, and the TLS library's
/// own words.
public struct TrustFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The check that failed.
    public enum Check: String, Sendable, Equatable {
        /// The chain leads to none of the policy's anchors (an unknown CA, a self-signed certificate).
        case chain
        /// A certificate of the chain is expired or not yet valid.
        case validity
        /// The certificate is for another host name.
        case hostName
        /// The leaf certificate's public key is none of the policy's pins.
        case publicKeyPin
        /// The server asked for a client certificate and refused the one sent, or none was sent.
        case clientCertificate
        /// The client certificate or key could not be used (they don't match, the passphrase is wrong).
        case clientIdentity
        /// The handshake failed otherwise.
        case handshake
    }

    /// The host whose connection was refused (a redirect's target, for a redirect hop).
    public let host: String
    /// The check that failed.
    public let check: Check
    /// The TLS library's message.
    public let reason: String

    /// Creates a failure.
    public init(host: String, check: Check, reason: String) {
        self.host = host
        self.check = check
        self.reason = reason
    }

    /// One line: the host, the check, the reason.
    public var description: String { "\(host): \(check.rawValue) check failed: \(reason)" }
}

extension TrustFailure.Check {
    /// The check a verification failure of the peer's certificate failed, from OpenSSL's words as
    /// libcurl reports them (`SSL certificate problem: …`, `SSL: no alternative certificate subject
    /// name matches …`).
    static func ofPeerVerification(_ lowered: String) -> TrustFailure.Check {
        if lowered.contains("expired") || lowered.contains("not yet valid") { return .validity }
        if lowered.contains("subject name") || lowered.contains("host name") || lowered.contains("hostname") || lowered.contains("does not match") {
            return .hostName
        }
        return .chain
    }

    /// The check a TLS failure message names, when it names one: a peer the client doesn't trust, a
    /// pin, or the server's alert refusing the client's certificate (TLS 1.3 sends it after the
    /// handshake, so it can arrive as a read error). `nil`: not a trust failure (a server that doesn't
    /// speak TLS, a reset).
    static func named(inTLSMessage lowered: String) -> TrustFailure.Check? {
        if lowered.contains("ssl certificate problem") || lowered.contains("no alternative certificate subject name") || lowered.contains("certificate subject name") {
            return ofPeerVerification(lowered)
        }
        if lowered.contains("pinned public key") { return .publicKeyPin }
        let alerts = ["certificate required", "alert bad certificate", "alert unknown ca", "alert certificate unknown", "peer did not return a certificate"]
        if alerts.contains(where: lowered.contains) { return .clientCertificate }
        return nil
    }
}
