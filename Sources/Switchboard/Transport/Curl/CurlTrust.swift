#if canImport(Glibc)
import Foundation

/// A ``ServerTrust`` as the libcurl transport applies it: each policy's options prepared once (its
/// CA bundle, pins, client certificate and key in memory libcurl reads in place), or why it can't be
/// applied here. Immutable after `init`; the transport and each transfer keep it alive as long as an
/// easy handle may point into it.
///
/// `@unchecked Sendable`: every property is a `let` set in `init` and the blobs' memory is never
/// written after it.
final class CurlTrust: @unchecked Sendable {
    /// Why no send may go out (an invalid setting, or one this libcurl can't honour): `nil` when it can.
    let refusal: String?
    /// The options of hosts without their own policy; `nil`: libcurl's defaults (the system's CAs).
    private let defaultOptions: CurlTLSOptions?
    /// The options of named hosts (normalised names), development hosts included.
    private let hostOptions: [String: CurlTLSOptions]
    private let setting: ServerTrust

    init(_ setting: ServerTrust, curl: CurlLibrary) {
        self.setting = setting
        guard !setting.isSystemDefault else {
            refusal = nil
            defaultOptions = nil
            hostOptions = [:]
            return
        }
        if let problem = setting.problem {
            refusal = problem
            defaultOptions = nil
            hostOptions = [:]
            return
        }
        var prepared: [TrustPolicy: CurlTLSOptions] = [:]
        var failure: String?
        func options(_ policy: TrustPolicy, verifies: Bool) -> CurlTLSOptions? {
            if verifies, policy.isSystemDefault { return nil }
            if verifies, let made = prepared[policy] { return made }
            switch CurlTLSOptions.make(policy, verifies: verifies, curl: curl) {
            case .success(let made):
                if verifies { prepared[policy] = made }
                return made
            case .failure(let error):
                failure = failure ?? error.reason
                return nil
            }
        }
        let defaults = options(setting.defaultPolicy, verifies: true)
        var hosts: [String: CurlTLSOptions] = [:]
        for (host, policy) in setting.hostPolicies {
            hosts[host] = options(policy, verifies: true)
        }
        for name in setting.developmentHosts {
            let host = ServerTrust.normalized(name)
            hosts[host] = options(setting.policy(for: host), verifies: false)
        }
        refusal = failure
        defaultOptions = defaults
        hostOptions = hosts
    }

    /// The options a connection to `host` is made with; `nil`: libcurl's defaults.
    func options(for host: String) -> CurlTLSOptions? {
        if setting.hostPolicies.isEmpty, setting.developmentHosts.isEmpty { return defaultOptions }
        let name = ServerTrust.normalized(host)
        if let own = hostOptions[name] { return own }
        // A host with the system policy of its own has no entry: the default must not apply to it.
        return setting.hostPolicies[name] != nil ? nil : defaultOptions
    }
}

/// One policy's libcurl options, made once. Immutable after `init`.
///
/// `@unchecked Sendable`: `let`s only; the blobs are read by libcurl, never written.
final class CurlTLSOptions: @unchecked Sendable {
    /// Whether the peer and its host name are verified (false for a development host only).
    let verifies: Bool
    /// Whether the system's CA bundle and folder are left out (`CAINFO` and `CAPATH` cleared).
    let excludesSystemCAs: Bool
    /// The anchors as a PEM bundle (the system's first for `systemAnd`); `nil`: the system's.
    let anchors: CurlBlob?
    /// `sha256//…;sha256//…`, or `nil`.
    let pins: String?
    let certificate: CurlBlob?
    let key: CurlBlob?
    let passphrase: String?

    private init(verifies: Bool, excludesSystemCAs: Bool, anchors: CurlBlob?, pins: String?, certificate: CurlBlob?, key: CurlBlob?, passphrase: String?) {
        self.verifies = verifies
        self.excludesSystemCAs = excludesSystemCAs
        self.anchors = anchors
        self.pins = pins
        self.certificate = certificate
        self.key = key
        self.passphrase = passphrase
    }

    /// The options of `policy`, or why this libcurl can't apply them.
    static func make(_ policy: TrustPolicy, verifies: Bool, curl: CurlLibrary) -> Result<CurlTLSOptions, TrustPolicyError> {
        let needsBlobs = policy.anchors != .system || policy.clientIdentity != nil
        if needsBlobs || policy.pins != nil {
            // The blob options came in 7.77 (CA bundles) and work with OpenSSL; GnuTLS takes no CA
            // blob. Without them the policy can't be applied: refused, never weakened.
            guard curl.sslBackend.hasPrefix("OpenSSL") else {
                let backend = curl.sslBackend.isEmpty ? "no TLS library" : curl.sslBackend
                return .failure(
                    TrustPolicyError(reason: "libcurl \(curl.version) uses \(backend); CA bundles, pins and client certificates from memory need libcurl built with OpenSSL"))
            }
            guard !needsBlobs || curl.versionNumber >= CurlConstant.blobVersion else {
                return .failure(TrustPolicyError(reason: "libcurl \(curl.version) is older than 7.77, the first that takes CA bundles and client certificates from memory"))
            }
        }
        var anchors: CurlBlob?
        var excludes = false
        switch policy.anchors {
        case .system:
            break
        case .only(let certificates):
            anchors = CurlBlob(Data(certificates.map(\.pem).joined().utf8))
            excludes = true
        case .systemAnd(let certificates):
            switch systemBundle(curl) {
            case .failure(let error): return .failure(error)
            case .success(let bundle):
                var text = bundle ?? Data()
                if !text.isEmpty, text.last != 0x0A { text.append(0x0A) }
                text.append(Data(certificates.map(\.pem).joined().utf8))
                anchors = CurlBlob(text)
            }
        }
        let identity = policy.clientIdentity
        return .success(
            CurlTLSOptions(
                verifies: verifies, excludesSystemCAs: excludes, anchors: anchors,
                pins: policy.pins.map { $0.map(\.description).joined(separator: ";") },
                certificate: identity.map { CurlBlob(Data($0.certificate.pem.utf8)) }, key: identity.map { CurlBlob($0.privateKeyPEM) },
                passphrase: identity?.passphrase))
    }

    /// The system's CA bundle (libcurl's built-in `CAINFO`), read once per policy; `nil` when libcurl
    /// has none (its CA folder, still used, holds the system's CAs).
    private static func systemBundle(_ curl: CurlLibrary) -> Result<Data?, TrustPolicyError> {
        var path: String?
        if let easy = curl.easyInit() {
            var value: UnsafePointer<CChar>?
            if curl.getString(easy, CurlConstant.infoCAInfo, &value) == CurlConstant.ok, let value { path = String(cString: value) }
            curl.easyCleanup(easy)
        }
        // Before 7.84 libcurl doesn't say: the usual places.
        if path == nil {
            path = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem"]
                .first { FileManager.default.isReadableFile(atPath: $0) }
        }
        guard let path else { return .success(nil) }
        guard let bundle = FileManager.default.contents(atPath: path) else {
            return .failure(TrustPolicyError(reason: "the system's CA bundle \(path) can't be read, so \"the system's CAs and these\" can't be built"))
        }
        return .success(bundle)
    }

    /// Sets the options on `handle` (reset to libcurl's defaults before). Returns the first option
    /// libcurl refused, as the reason nothing may be sent.
    func apply(to handle: CurlLibrary.Handle, curl: CurlLibrary) -> String? {
        var refused: String?
        func check(_ code: Int32, _ name: String) {
            if code != CurlConstant.ok, refused == nil { refused = "libcurl \(curl.version) refused \(name): \(curl.describe(code))" }
        }
        if !verifies {
            check(curl.setLong(handle, CurlConstant.optSSLVerifyPeer, 0), "CURLOPT_SSL_VERIFYPEER")
            check(curl.setLong(handle, CurlConstant.optSSLVerifyHost, 0), "CURLOPT_SSL_VERIFYHOST")
        }
        if excludesSystemCAs {
            check(curl.setPointer(handle, CurlConstant.optCAInfo, nil as UnsafeRawPointer?), "CURLOPT_CAINFO")
            check(curl.setPointer(handle, CurlConstant.optCAPath, nil as UnsafeRawPointer?), "CURLOPT_CAPATH")
        }
        if let anchors { check(curl.setPointer(handle, CurlConstant.optCAInfoBlob, anchors.blob), "CURLOPT_CAINFO_BLOB") }
        if let pins { check(pins.withCString { curl.setPointer(handle, CurlConstant.optPinnedPublicKey, $0) }, "CURLOPT_PINNEDPUBLICKEY") }
        if let certificate {
            check(curl.setPointer(handle, CurlConstant.optSSLCertBlob, certificate.blob), "CURLOPT_SSLCERT_BLOB")
            check("PEM".withCString { curl.setPointer(handle, CurlConstant.optSSLCertType, $0) }, "CURLOPT_SSLCERTTYPE")
        }
        if let key {
            check(curl.setPointer(handle, CurlConstant.optSSLKeyBlob, key.blob), "CURLOPT_SSLKEY_BLOB")
            check("PEM".withCString { curl.setPointer(handle, CurlConstant.optSSLKeyType, $0) }, "CURLOPT_SSLKEYTYPE")
            // Always a passphrase, "" for none: libcurl 7.88 reads a key blob through a password
            // callback that would crash on an encrypted key without one.
            check((passphrase ?? "").withCString { curl.setPointer(handle, CurlConstant.optKeyPassword, $0) }, "CURLOPT_KEYPASSWD")
        }
        return refused
    }
}

/// Bytes libcurl reads in place: a `struct curl_blob { void *data; size_t len; unsigned int flags; }`
/// with `CURL_BLOB_NOCOPY`, and the bytes, both in memory this object owns and frees.
///
/// `@unchecked Sendable`: the memory is written in `init` only.
final class CurlBlob: @unchecked Sendable {
    /// The `struct curl_blob`, for `curl_easy_setopt`.
    let blob: UnsafeMutableRawPointer
    private let bytes: UnsafeMutableRawBufferPointer

    init(_ data: Data) {
        bytes = .allocate(byteCount: max(1, data.count), alignment: 16)
        _ = data.copyBytes(to: bytes.bindMemory(to: UInt8.self))
        let pointerSize = MemoryLayout<UnsafeRawPointer>.size
        blob = .allocate(byteCount: 3 * pointerSize, alignment: pointerSize)
        blob.initializeMemory(as: UInt8.self, repeating: 0, count: 3 * pointerSize)
        blob.storeBytes(of: bytes.baseAddress, as: UnsafeMutableRawPointer?.self)
        blob.storeBytes(of: data.count, toByteOffset: pointerSize, as: Int.self)
        blob.storeBytes(of: 0, toByteOffset: 2 * pointerSize, as: UInt32.self)  // CURL_BLOB_NOCOPY
    }

    deinit {
        blob.deallocate()
        bytes.deallocate()
    }
}
#endif
