#if canImport(Glibc)
/// The libcurl constants the libcurl transport uses, copied from libcurl's public headers
/// (`curl/curl.h`, `curl/multi.h`) of libcurl 7.88.1, the version Debian 12 ships. libcurl never
/// renumbers a published constant, so these hold for every version from 7.68 (the oldest the
/// transport loads) on. Each value's header line is `CURLOPT(name, type, number)`, with the type's
/// base added: `LONG` 0, `OBJECTPOINT`/`STRINGPOINT`/`SLISTPOINT`/`CBPOINT` 10000,
/// `FUNCTIONPOINT` 20000, `OFF_T` 30000.
enum CurlConstant {
    // MARK: curl_easy_setopt options (CURLoption)

    static let optWriteData: Int32 = 10_000 + 1
    static let optURL: Int32 = 10_000 + 2
    static let optReadData: Int32 = 10_000 + 9
    static let optErrorBuffer: Int32 = 10_000 + 10
    static let optWriteFunction: Int32 = 20_000 + 11
    static let optReadFunction: Int32 = 20_000 + 12
    static let optHTTPHeader: Int32 = 10_000 + 23
    static let optHeaderData: Int32 = 10_000 + 29
    static let optCustomRequest: Int32 = 10_000 + 36
    static let optNoProgress: Int32 = 43
    static let optNoBody: Int32 = 44
    static let optPost: Int32 = 47
    static let optFollowLocation: Int32 = 52
    static let optHeaderFunction: Int32 = 20_000 + 79
    static let optHTTPGet: Int32 = 80
    static let optHTTPVersion: Int32 = 84
    static let optNoSignal: Int32 = 99
    static let optAcceptEncoding: Int32 = 10_000 + 102
    static let optPostFieldSizeLarge: Int32 = 30_000 + 120
    static let optConnectTimeoutMS: Int32 = 156
    static let optProtocols: Int32 = 181  // deprecated in 7.85 for CURLOPT_PROTOCOLS_STR, which 7.68 lacks
    static let optTCPKeepAlive: Int32 = 213
    static let optPipeWait: Int32 = 237
    static let optXferInfoData: Int32 = 10_000 + 57
    static let optXferInfoFunction: Int32 = 20_000 + 219

    static let optSuppressConnectHeaders: Int32 = 265
    // Proxies.
    static let optProxy: Int32 = 10_000 + 4
    static let optProxyUserName: Int32 = 10_000 + 175
    static let optProxyPassword: Int32 = 10_000 + 176
    static let optNoProxy: Int32 = 10_000 + 177
    // TLS (the trust policy).
    static let optSSLCert: Int32 = 10_000 + 25
    static let optKeyPassword: Int32 = 10_000 + 26
    static let optSSLVerifyPeer: Int32 = 64
    static let optCAInfo: Int32 = 10_000 + 65
    static let optSSLVerifyHost: Int32 = 81
    static let optSSLCertType: Int32 = 10_000 + 86
    static let optSSLKey: Int32 = 10_000 + 87
    static let optSSLKeyType: Int32 = 10_000 + 88
    static let optCAPath: Int32 = 10_000 + 97
    static let optPinnedPublicKey: Int32 = 10_000 + 230
    static let optSSLCertBlob: Int32 = 40_000 + 291
    static let optSSLKeyBlob: Int32 = 40_000 + 292
    static let optCAInfoBlob: Int32 = 40_000 + 309
    /// `CURLINFO_CAINFO` (7.84): the built-in CA bundle's path.
    static let infoCAInfo: Int32 = 0x10_0000 + 61
    /// 7.77.0: the first with `CURLOPT_CAINFO_BLOB`.
    static let blobVersion: UInt32 = 0x07_4D_00

    // MARK: curl_multi_setopt options (CURLMoption)

    static let multiOptPipelining: Int32 = 3
    static let multiOptMaxHostConnections: Int32 = 7

    // MARK: values

    /// `CURL_GLOBAL_ALL` (`CURL_GLOBAL_SSL | CURL_GLOBAL_WIN32`).
    static let globalAll = 3
    /// `CURLPROTO_HTTP | CURLPROTO_HTTPS`.
    static let protocolsHTTP = (1 << 0) | (1 << 1)
    /// `CURL_HTTP_VERSION_2TLS`: HTTP/2 over TLS when the server offers it, HTTP/1.1 in clear text.
    static let httpVersion2TLS = 4
    /// `CURLPIPE_MULTIPLEX`.
    static let pipeMultiplex = 2
    /// `CURLMSG_DONE`.
    static let messageDone: Int32 = 1
    /// `CURL_READFUNC_ABORT`.
    static let readAbort = 0x1000_0000
    /// `CURL_ERROR_SIZE`: the error buffer's size.
    static let errorSize = 256
    /// `CURLVERSION_FIRST`: the oldest `curl_version_info_data` layout, whose fields are all we read.
    static let versionFirst: Int32 = 0
    /// `CURL_VERSION_HTTP2`, `CURL_VERSION_BROTLI` in `curl_version_info_data.features`.
    static let featureHTTP2: Int32 = 1 << 16
    static let featureBrotli: Int32 = 1 << 23
    /// 7.68.0 as `LIBCURL_VERSION_NUM` encodes it (0xXXYYZZ): the first with `curl_multi_wakeup`.
    static let oldestVersion: UInt32 = 0x07_44_00

    // MARK: CURLcode

    static let ok: Int32 = 0
    static let unsupportedProtocol: Int32 = 1
    static let urlMalformat: Int32 = 3
    static let couldntResolveProxy: Int32 = 5
    static let couldntResolveHost: Int32 = 6
    static let couldntConnect: Int32 = 7
    static let weirdServerReply: Int32 = 8
    static let http2: Int32 = 16
    static let partialFile: Int32 = 18
    static let writeError: Int32 = 23
    static let readError: Int32 = 26
    static let outOfMemory: Int32 = 27
    static let operationTimedOut: Int32 = 28
    static let sslConnectError: Int32 = 35
    static let abortedByCallback: Int32 = 42
    static let tooManyRedirects: Int32 = 47
    static let gotNothing: Int32 = 52
    static let sendError: Int32 = 55
    static let recvError: Int32 = 56
    static let sslCertProblem: Int32 = 58
    static let peerFailedVerification: Int32 = 60
    static let badContentEncoding: Int32 = 61
    static let sendFailRewind: Int32 = 65
    static let sslCACertBadFile: Int32 = 77
    static let sslPinnedKeyMismatch: Int32 = 90
    static let sslClientCert: Int32 = 98
    static let proxyHandshake: Int32 = 97
    static let http2Stream: Int32 = 92
}
#endif
