#if canImport(Glibc)
import Glibc

/// libcurl, loaded at run time with `dlopen` (no headers, no `-dev` package, no link-time dependency):
/// the functions the libcurl transport calls, as typed C function pointers.
///
/// The variadic `curl_easy_setopt`, `curl_multi_setopt` and `curl_easy_getinfo` are called through
/// fixed-signature pointers, one per argument type, and only with integer (`long`, `curl_off_t`) and
/// pointer arguments. That is sound where a variadic callee reads such arguments exactly as a
/// non-variadic one would be given them: the System V x86_64 and the AArch64 Linux calling
/// conventions. Elsewhere the library refuses to load.
///
/// `@unchecked Sendable`: every stored property is an immutable C function pointer or the library
/// handle, set once in `init`; libcurl's functions are safe to call from any thread on distinct
/// handles (each easy and multi handle is used by one thread at a time, the transport's loop thread).
final class CurlLibrary: @unchecked Sendable {
    typealias Handle = OpaquePointer
    typealias DataCallback = @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int
    /// `CURLOPT_XFERINFOFUNCTION`: (context, download total, downloaded, upload total, uploaded).
    typealias TransferInfoCallback = @convention(c) (UnsafeMutableRawPointer?, Int64, Int64, Int64, Int64) -> Int32

    let version: String
    let versionNumber: UInt32
    let supportsHTTP2: Bool
    let supportsBrotli: Bool
    /// The TLS library libcurl was built with, as it names it (`OpenSSL/3.0.19`, `GnuTLS/3.7.9`), or "".
    let sslBackend: String

    let easyInit: @convention(c) () -> Handle?
    let easyCleanup: @convention(c) (Handle?) -> Void
    let easyReset: @convention(c) (Handle?) -> Void
    let setLong: @convention(c) (Handle?, Int32, Int) -> Int32
    let setPointer: @convention(c) (Handle?, Int32, UnsafeRawPointer?) -> Int32
    let setOffset: @convention(c) (Handle?, Int32, Int64) -> Int32
    /// `curl_easy_getinfo` with a `char **` (a string `CURLINFO_*`).
    let getString: @convention(c) (Handle?, Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32
    let multiInit: @convention(c) () -> Handle?
    let multiCleanup: @convention(c) (Handle?) -> Int32
    let multiAdd: @convention(c) (Handle?, Handle?) -> Int32
    let multiRemove: @convention(c) (Handle?, Handle?) -> Int32
    let multiPerform: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32
    let multiPoll: @convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32
    let multiWakeup: @convention(c) (Handle?) -> Int32
    let multiInfoRead: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?
    let multiSetLong: @convention(c) (Handle?, Int32, Int) -> Int32
    let slistAppend: @convention(c) (Handle?, UnsafePointer<CChar>?) -> Handle?
    let slistFreeAll: @convention(c) (Handle?) -> Void
    let strerror: @convention(c) (Int32) -> UnsafePointer<CChar>?

    /// The library, loaded once per process; or why it can't be.
    static let shared: Result<CurlLibrary, CurlLoadError> = Result { try CurlLibrary() }.mapError { $0 as? CurlLoadError ?? CurlLoadError(reason: "\($0)") }

    private init() throws {
        #if !(arch(x86_64) || arch(arm64))
        throw CurlLoadError(reason: "the libcurl transport calls libcurl's variadic functions in a way that is sound only on x86_64 and AArch64 Linux")
        #endif
        var library: UnsafeMutableRawPointer?
        for name in ["libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4"] {
            library = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            if library != nil { break }
        }
        guard let library else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            throw CurlLoadError(reason: "libcurl.so.4 could not be loaded (\(reason)); install libcurl (Debian and Ubuntu: libcurl4)")
        }
        func symbol<T>(_ name: String, _ type: T.Type) throws -> T {
            guard let address = dlsym(library, name) else { throw CurlLoadError(reason: "libcurl has no \(name)") }
            return unsafeBitCast(address, to: type)
        }
        let versionInfo = try symbol("curl_version_info", (@convention(c) (Int32) -> UnsafeMutableRawPointer?).self)
        guard let info = versionInfo(CurlConstant.versionFirst) else { throw CurlLoadError(reason: "curl_version_info returned nothing") }
        // curl_version_info_data: int age; const char *version; unsigned int version_num; const char *host; int features; …
        let pointerSize = MemoryLayout<UnsafeRawPointer>.size
        version = info.load(fromByteOffset: pointerSize, as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? "?"
        versionNumber = info.load(fromByteOffset: 2 * pointerSize, as: UInt32.self)
        let features = info.load(fromByteOffset: 4 * pointerSize, as: Int32.self)
        supportsHTTP2 = features & CurlConstant.featureHTTP2 != 0
        supportsBrotli = features & CurlConstant.featureBrotli != 0
        // … int features; const char *ssl_version; …
        sslBackend = info.load(fromByteOffset: 5 * pointerSize, as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? ""
        if let refusal = Self.refusal(version: version, versionNumber: versionNumber) { throw refusal }
        let globalInit = try symbol("curl_global_init", (@convention(c) (Int) -> Int32).self)
        easyInit = try symbol("curl_easy_init", (@convention(c) () -> Handle?).self)
        easyCleanup = try symbol("curl_easy_cleanup", (@convention(c) (Handle?) -> Void).self)
        easyReset = try symbol("curl_easy_reset", (@convention(c) (Handle?) -> Void).self)
        setLong = try symbol("curl_easy_setopt", (@convention(c) (Handle?, Int32, Int) -> Int32).self)
        setPointer = try symbol("curl_easy_setopt", (@convention(c) (Handle?, Int32, UnsafeRawPointer?) -> Int32).self)
        setOffset = try symbol("curl_easy_setopt", (@convention(c) (Handle?, Int32, Int64) -> Int32).self)
        getString = try symbol("curl_easy_getinfo", (@convention(c) (Handle?, Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32).self)
        multiInit = try symbol("curl_multi_init", (@convention(c) () -> Handle?).self)
        multiCleanup = try symbol("curl_multi_cleanup", (@convention(c) (Handle?) -> Int32).self)
        multiAdd = try symbol("curl_multi_add_handle", (@convention(c) (Handle?, Handle?) -> Int32).self)
        multiRemove = try symbol("curl_multi_remove_handle", (@convention(c) (Handle?, Handle?) -> Int32).self)
        multiPerform = try symbol("curl_multi_perform", (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> Int32).self)
        multiPoll = try symbol("curl_multi_poll", (@convention(c) (Handle?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32).self)
        multiWakeup = try symbol("curl_multi_wakeup", (@convention(c) (Handle?) -> Int32).self)
        multiInfoRead = try symbol("curl_multi_info_read", (@convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?).self)
        multiSetLong = try symbol("curl_multi_setopt", (@convention(c) (Handle?, Int32, Int) -> Int32).self)
        slistAppend = try symbol("curl_slist_append", (@convention(c) (Handle?, UnsafePointer<CChar>?) -> Handle?).self)
        slistFreeAll = try symbol("curl_slist_free_all", (@convention(c) (Handle?) -> Void).self)
        strerror = try symbol("curl_easy_strerror", (@convention(c) (Int32) -> UnsafePointer<CChar>?).self)
        // Once per process, before any other thread uses libcurl (FoundationNetworking may have done it
        // already; the call is counted, so a second is harmless).
        let status = globalInit(CurlConstant.globalAll)
        guard status == CurlConstant.ok else { throw CurlLoadError(reason: "curl_global_init failed with \(status)") }
    }

    /// Why a libcurl of this version can't be used, or `nil` when it can (7.68 and later: the first
    /// with `curl_multi_wakeup`).
    static func refusal(version: String, versionNumber: UInt32) -> CurlLoadError? {
        versionNumber >= CurlConstant.oldestVersion ? nil : CurlLoadError(reason: "libcurl \(version) is older than 7.68, the first with curl_multi_wakeup")
    }

    /// libcurl's description of a result code.
    func describe(_ code: Int32) -> String {
        strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }
}
#endif

/// Why the libcurl transport can't be used here: no libcurl, one older than 7.68, another platform.
public struct CurlLoadError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in a sentence.
    public let reason: String

    /// The reason, prefixed with what failed.
    public var description: String { "the libcurl transport is not available: \(reason)" }
}
