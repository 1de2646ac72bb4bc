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
