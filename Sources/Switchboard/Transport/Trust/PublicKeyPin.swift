import Foundation

/// A pinned public key: the SHA-256 of a certificate's DER-encoded SubjectPublicKeyInfo, as HPKP
/// (RFC 7469) and libcurl's `CURLOPT_PINNEDPUBLICKEY` define it. The same value as
/// `openssl x509 -pubkey -noout -in cert.pem | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64`.
///
/// A pin is checked against the **leaf** certificate's key (the server's own), after the chain has
/// been validated against the policy's anchors: see ``TrustPolicy/pinnedPublicKeys(_:anchors:)``.
public struct PublicKeyPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256.
    public let sha256: Data

    /// A pin from its base64 form, with or without libcurl's `sha256//` prefix.
    /// - Throws: ``TrustPolicyError`` when it isn't the base64 of 32 bytes.
    public init(sha256Base64 text: String) throws(TrustPolicyError) {
        var value = text.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("sha256//") { value.removeFirst(8) }
        guard let bytes = Data(base64Encoded: value), bytes.count == 32 else {
            throw TrustPolicyError(reason: "a public-key pin must be the base64 of a 32-byte SHA-256 (\"sha256//…\" or the base64 alone), not \(text.debugDescription)")
        }
        sha256 = bytes
    }

    /// The pin of a DER-encoded SubjectPublicKeyInfo.
    init(publicKeyInfo: Data) {
        sha256 = Data(SHA256.digest(publicKeyInfo))
    }

    /// The pin's base64.
    public var base64: String { sha256.base64EncodedString() }

    /// `sha256//<base64>`, libcurl's form.
    public var description: String { "sha256//" + base64 }
}
