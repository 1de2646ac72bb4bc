import Foundation

/// An X.509 certificate given to a ``TrustPolicy``: a CA to trust, a certificate to pin, or the
/// certificate of a ``ClientIdentity``. Made from DER bytes or a PEM `CERTIFICATE` block; the bytes are
/// checked to be one certificate whose public key can be found, and kept as they were given.
///
/// ```swift
/// let ca = try TrustCertificate.certificates(pem: Data(contentsOf: caFile))
/// let pinned = try TrustCertificate(der: Data(contentsOf: derFile))
/// ```
public struct TrustCertificate: Sendable, Hashable, CustomStringConvertible {
    /// The certificate's DER bytes.
    public let der: Data
    /// Where the SubjectPublicKeyInfo lies in ``der``.
    private let publicKeyRange: Range<Int>

    /// A certificate from its DER bytes.
    /// - Throws: ``TrustPolicyError`` when the bytes are not one X.509 certificate.
    public init(der: Data) throws(TrustPolicyError) {
        let bytes = [UInt8](der)
        guard let range = DERReader.subjectPublicKeyInfo(inCertificate: bytes) else {
            throw TrustPolicyError(reason: "the bytes are not a DER-encoded X.509 certificate (\(bytes.count) bytes)")
        }
        self.der = Data(bytes)
        publicKeyRange = range
    }

    /// The certificate of a PEM text holding exactly one `CERTIFICATE` block.
    /// - Throws: ``TrustPolicyError`` when there is none, more than one, or one that doesn't decode.
    public init(pem: Data) throws(TrustPolicyError) {
        let all = try Self.certificates(pem: pem)
        guard all.count == 1 else { throw TrustPolicyError(reason: "the PEM text holds \(all.count) certificates; use TrustCertificate.certificates(pem:)") }
        self = all[0]
    }

    /// Every `CERTIFICATE` block of a PEM text (a CA bundle), in order. Text outside the blocks is
    /// ignored, as OpenSSL ignores it.
    /// - Throws: ``TrustPolicyError`` when there is no block, a block is not closed, or one doesn't
    ///   decode to a certificate.
    public static func certificates(pem: Data) throws(TrustPolicyError) -> [TrustCertificate] {
        let blocks = try PEM.blocks(in: pem, label: "CERTIFICATE")
        guard !blocks.isEmpty else { throw TrustPolicyError(reason: "no -----BEGIN CERTIFICATE----- block in the PEM text") }
        var certificates: [TrustCertificate] = []
        for (index, block) in blocks.enumerated() {
            do {
                certificates.append(try TrustCertificate(der: block))
            } catch {
                throw TrustPolicyError(reason: "certificate \(index + 1) of the PEM text: \(error.reason)")
            }
        }
        return certificates
    }

    /// The certificate's SubjectPublicKeyInfo, DER-encoded: what a ``PublicKeyPin`` hashes.
    public var subjectPublicKeyInfo: Data { der.subdata(in: publicKeyRange) }

    /// The pin of this certificate's public key.
    public var publicKeyPin: PublicKeyPin { PublicKeyPin(publicKeyInfo: subjectPublicKeyInfo) }

    /// The certificate as a PEM block.
    public var pem: String { PEM.encode(der, label: "CERTIFICATE") }

    /// A short description: the pin of its key.
    public var description: String { "certificate with key \(publicKeyPin)" }

    /// Whether both are the same certificate (the same DER bytes).
    public static func == (lhs: TrustCertificate, rhs: TrustCertificate) -> Bool { lhs.der == rhs.der }
    /// Hashes the DER bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(der) }
}

/// A trust setting that can't be made: a certificate, pin or key that doesn't parse.
public struct TrustPolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, in a sentence.
    public let reason: String

    /// The reason, prefixed with what failed.
    public var description: String { "invalid trust setting: \(reason)" }
}
