import Foundation

/// A client certificate and its private key, for servers that ask for one (mutual TLS).
///
/// ```swift
/// let identity = try ClientIdentity(certificate: TrustCertificate(pem: certPEM), privateKeyPEM: keyPEM)
/// configuration.serverTrust["api.example.com"] = .system.presenting(identity)
/// ```
///
/// The key is PEM (`PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY` or `ENCRYPTED PRIVATE KEY` with
/// its passphrase). It stays in this value's memory and libcurl's; it is never written to a file or a
/// log (its ``description`` shows only the certificate's key pin).
public struct ClientIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The certificate sent to the server.
    public let certificate: TrustCertificate
    /// The private key, as PEM text.
    let privateKeyPEM: Data
    /// The key's passphrase, when it is encrypted.
    let passphrase: String?

    /// An identity from a certificate and the PEM text of its private key.
    /// - Throws: ``TrustPolicyError`` when the key text holds no private key block.
    public init(certificate: TrustCertificate, privateKeyPEM: Data, passphrase: String? = nil) throws(TrustPolicyError) {
        let labels = try PEM.labelledBlocks(in: privateKeyPEM).map(\.label)
        let keyLabels: Set<String> = ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY"]
        guard labels.contains(where: keyLabels.contains) else {
            throw TrustPolicyError(reason: "no private key block (-----BEGIN PRIVATE KEY-----) in the key's PEM text")
        }
        // PKCS #8's encrypted form, or the traditional one with a `Proc-Type: 4,ENCRYPTED` header.
        let encrypted = labels.contains("ENCRYPTED PRIVATE KEY") || String(decoding: privateKeyPEM, as: UTF8.self).contains("Proc-Type: 4,ENCRYPTED")
        if encrypted, passphrase == nil {
            throw TrustPolicyError(reason: "the private key is encrypted: give its passphrase")
        }
        self.certificate = certificate
        self.privateKeyPEM = privateKeyPEM
        self.passphrase = passphrase
    }

    /// The certificate's key pin; never the private key.
    public var description: String { "client identity (\(certificate))" }
}

extension ClientIdentity: CustomReflectable {
    /// The certificate only: `dump` and debuggers never show the key or its passphrase.
    public var customMirror: Mirror { Mirror(self, children: ["certificate": certificate], displayStyle: .struct) }
}
