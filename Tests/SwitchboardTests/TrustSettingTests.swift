import Foundation
import Switchboard
import Testing

/// The trust types' parsing and rules, without a network: every bad input is a typed error, never a
/// crash, and no input makes a setting weaker than it says.
@Suite(.enabled(if: TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? "")")) struct TrustSettingTests {
    @Test func aPEMBundleGivesEveryCertificateInOrder() async throws {
        let lab = try await TLSLab.materials()
        let bundle = lab.caA.certificatePEM + Data("\nsome text between blocks\n".utf8) + lab.caB.certificatePEM
        let certificates = try TrustCertificate.certificates(pem: bundle)
        #expect(certificates == [try lab.caA.trustCertificate(), try lab.caB.trustCertificate()])
        // One block: the single-certificate form takes it; two: it refuses, naming the other form.
        #expect(throws: TrustPolicyError.self) { try TrustCertificate(pem: bundle) }
        // Round trip through the package's own PEM.
        let again = try TrustCertificate(pem: Data(certificates[0].pem.utf8))
        #expect(again == certificates[0])
    }

    @Test func badPEMAndDERAreTypedErrors() async throws {
        let lab = try await TLSLab.materials()
        let good = try lab.caA.trustCertificate()
        let bad: [(String, Data)] = [
            ("empty", Data()),
            ("no block", Data("hello".utf8)),
            ("not closed", Data("-----BEGIN CERTIFICATE-----\nMIIB\n".utf8)),
            ("bad base64", Data("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".utf8)),
            ("mismatched end", Data("-----BEGIN CERTIFICATE-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8)),
            ("not a certificate", Data(PEMText.block(Data([0x30, 0x03, 0x02, 0x01, 0x01]), "CERTIFICATE").utf8)),
            ("not UTF-8", Data([0xFF, 0xFE, 0x00])),
        ]
        for (name, pem) in bad {
            #expect(throws: TrustPolicyError.self, "\(name)") { try TrustCertificate.certificates(pem: pem) }
        }
        // Every prefix of a valid DER certificate, and the certificate with a byte more, is refused.
        let der = good.der
        for length in stride(from: 0, to: der.count, by: 7) {
            #expect(throws: TrustPolicyError.self) { try TrustCertificate(der: der.prefix(length)) }
        }
        #expect(throws: TrustPolicyError.self) { try TrustCertificate(der: der + Data([0])) }
        // Random bytes: refused or (never here) parsed, and never a crash.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var bytes = [UInt8](repeating: 0, count: Int.random(in: 0..<200, using: &generator))
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
            if !bytes.isEmpty { bytes[0] = 0x30 }
            _ = try? TrustCertificate(der: Data(bytes))
        }
        // Each byte of a real certificate changed: refused or parsed, never a crash.
        for index in 0..<min(der.count, 400) {
            var changed = der
            changed[changed.startIndex + index] ^= 0xFF
            _ = try? TrustCertificate(der: changed)
        }
    }

    @Test func aPinIsTheBase64OfThirtyTwoBytesWithOrWithoutItsPrefix() throws {
        let bytes = Data((0..<32).map { UInt8($0) })
        let plain = try PublicKeyPin(sha256Base64: bytes.base64EncodedString())
        let prefixed = try PublicKeyPin(sha256Base64: "sha256//" + bytes.base64EncodedString())
        #expect(plain == prefixed)
        #expect(plain.sha256 == bytes)
        #expect(plain.description == "sha256//" + bytes.base64EncodedString())
        for text in ["", "sha256//", "not base64!", Data(count: 31).base64EncodedString(), Data(count: 33).base64EncodedString(), "sha1//" + bytes.base64EncodedString()] {
            #expect(throws: TrustPolicyError.self, "\(text)") { try PublicKeyPin(sha256Base64: text) }
        }
    }

    @Test func aCertificatesPinIsOpenSSLs() async throws {
        let lab = try await TLSLab.materials()
        #expect(try lab.server.trustCertificate().publicKeyPin.base64 == lab.serverPin)
        #expect(try lab.serverOtherKey.trustCertificate().publicKeyPin.base64 == lab.otherKeyPin)
    }

    @Test func aClientIdentityNeedsAPrivateKeyAndAnEncryptedKeysPassphrase() async throws {
        let lab = try await TLSLab.materials()
        let certificate = try lab.client.trustCertificate()
        let identity = try ClientIdentity(certificate: certificate, privateKeyPEM: lab.client.keyPEM)
        // The description names the certificate's key, never the private key.
        let keyText = String(decoding: lab.client.keyPEM, as: UTF8.self)
        #expect(!identity.description.contains(keyText.split(separator: "\n")[1]))
        #expect(throws: TrustPolicyError.self) { try ClientIdentity(certificate: certificate, privateKeyPEM: lab.client.certificatePEM) }
        #expect(throws: TrustPolicyError.self) { try ClientIdentity(certificate: certificate, privateKeyPEM: Data()) }
        let encrypted = Data(PEMText.block(Data([1, 2, 3]), "ENCRYPTED PRIVATE KEY").utf8)
        #expect(throws: TrustPolicyError.self) { try ClientIdentity(certificate: certificate, privateKeyPEM: encrypted) }
        _ = try ClientIdentity(certificate: certificate, privateKeyPEM: encrypted, passphrase: "secret")
    }

    @Test func hostPoliciesAreFoundWithoutCaseOrTrailingDotAndNoFurther() async throws {
        let lab = try await TLSLab.materials()
        let pinned = TrustPolicy.pinnedPublicKeys([try PublicKeyPin(sha256Base64: lab.serverPin)])
        var trust = ServerTrust()
        trust["API.Example.com."] = pinned
        #expect(trust.policy(for: "api.example.com") == pinned)
        #expect(trust.policy(for: "API.EXAMPLE.COM") == pinned)
        #expect(trust["api.example.com"] == pinned)
        // Not a parent's policy, not a child's.
        #expect(trust.policy(for: "example.com") == .system)
        #expect(trust.policy(for: "www.api.example.com") == .system)
        #expect(!trust.isSystemDefault)
        trust["api.example.com"] = nil
        #expect(trust.isSystemDefault)
        // An IPv6 address with or without its brackets.
        trust["[::1]"] = pinned
        #expect(trust.policy(for: "::1") == pinned)
        // Development hosts are named one by one.
        trust.developmentHosts = ["Dev.Local"]
        #expect(trust.isDevelopmentHost("dev.local."))
        #expect(!trust.isDevelopmentHost("other.dev.local"))
    }
}

/// PEM text for tests, made without the package's code.
enum PEMText {
    static func block(_ bytes: Data, _ label: String) -> String {
        "-----BEGIN \(label)-----\n" + bytes.base64EncodedString(options: .lineLength64Characters) + "\n-----END \(label)-----\n"
    }
}
