#if canImport(Glibc)
import Foundation
import FoundationNetworking

/// One transfer on the libcurl transport: its hops (redirects and a challenge's answer are hops of
/// their own, decided by ``TransferRules`` above libcurl, whose own redirect following is off), the
/// response head parsed from libcurl's header lines, the body into memory or a file, the upload
/// from memory, a file or a stream.
///
/// `@unchecked Sendable`: everything but `finishedFlag` and `unreported` is touched only by the loop
/// thread (the transfer is handed to it through the inbox's lock, before which only `init` ran);
/// `finishedFlag` is atomic and `unreported` is behind the lock wrapper.
final class CurlTransfer: @unchecked Sendable {
    enum HopEnd {
        /// Start the next hop (a redirect or a challenge's answer).
        case next
        case finished(Result<TransportResponse, NetworkError>)
    }

    /// What the current hop's response is for.
    enum Mode {
        /// The head hasn't ended yet.
        case head
        /// A redirect or challenge to follow once this response ends: its body is discarded.
        case followWith(URLRequest, TransferBody)
        /// The final response: its body goes to the destination.
        case receiving
        /// Stopped by a rule or a callback's decision: the transfer ends with this error.
        case failed(NetworkError)
    }

    let curl: CurlLibrary
    let request: TransportRequest
    let rules: TransferRules
    let callbacks: TransferCallbacks
    let cookieJar: HTTPCookieStorage?
    /// The transport's trust setting, prepared (kept alive while a handle may point into it).
    let trust: CurlTrust
    /// How hops reach their servers (``Configuration/proxy``).
    let proxies: ProxyRoutes
    /// The proxy the current hop goes through, if any.
    var hopProxy: ProxyRoutes.Proxy?
    /// The idle timeout, or `nil` for none (``IdleTimeouts``).
    let idleTimeout: TimeInterval?
    /// ``idleTimeout`` in nanoseconds (`UInt64.max` for none).
    let idleNanoseconds: UInt64
    /// When the current hop started or last sent or received a byte, in `DispatchTime` nanoseconds. The
    /// loop ends a hop idle for longer than ``idleTimeout`` (loop thread only). A wait for a free
    /// connection counts, as it does on URLSession.
    var lastActivity: UInt64 = 0
    /// The bytes libcurl last reported sent (an upload's progress is idle-timer activity).
    var reportedUpload: Int64 = 0
    let start = Date()
    let finishedFlag = AtomicFlag()
    /// The transport's count of transfers that have not called their completion yet: this one leaves
    /// it once its completion has returned.
    /// Locked (the transport's own lock): senders add in `perform`, the loop thread takes away, tests read.
    let unreported: Locked<Int>

    // The current hop (loop thread only).
    var easy: CurlEasy?
    var headerList = CurlHeaderList([])
    var current: URLRequest
    var currentBody: TransferBody
    var redirects = 0
    var challenges = 0
    var upload: UploadSource?
    var mode = Mode.head

    // The response being read.
    var status = 0
    var httpVersion = "HTTP/1.1"
    var fields: [HTTPHeaders.Field] = []
    var head: ResponseHead?
    /// Whether the current hop's head has ended (then header lines are trailers).
    var headComplete = false
    var data = Data()
    var file: FileHandle?
    var pending = Data()
    /// Set when a write to the destination file failed: nothing more is written to it. Loop thread only.
    var writeFailed = false
    var bytesReceived: Int64 = 0
    var expectedToReceive: Int64?
    var bytesSent: Int64 = 0
    var firstByte: TimeInterval?

    /// A transfer counted in `unreported` (by the caller) until its completion has returned.
    init(
        curl: CurlLibrary, request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks, cookieJar: HTTPCookieStorage?, trust: CurlTrust,
        proxies: ProxyRoutes, idleTimeout: TimeInterval?, unreported: Locked<Int>
    ) {
        self.curl = curl
        self.trust = trust
        self.proxies = proxies
        self.unreported = unreported
        self.request = request
        rules = TransferRules(options)
        self.callbacks = callbacks
        self.cookieJar = cookieJar
        // The loop's own timer, to the millisecond (libcurl's low-speed limit counts whole seconds and,
        // once a byte has arrived, fired seconds late).
        self.idleTimeout = idleTimeout
        // At least a millisecond: a positive timeout never ends a hop before it starts.
        idleNanoseconds = idleTimeout.map { max(1_000_000, UInt64($0 * 1e9)) } ?? .max
        current = request.urlRequest
        currentBody = request.body
    }

    deinit {
        headerList.free()
    }

    var isFinished: Bool { finishedFlag.isSet }

    /// Calls the completion, the first time only. On the loop thread. Every byte that arrived for the
    /// destination file is written first, whatever the outcome (a cancel or a pause included): the
    /// next send resumes from it.
    func finish(_ result: Result<TransportResponse, NetworkError>) {
        guard finishedFlag.testAndSet() else { return }
        _ = flush()
        try? file?.close()
        file = nil
        callbacks.completion(result)
        unreported.withLock { $0 -= 1 }
    }

    // MARK: Hops

    /// Configures `easy` for the current hop; on failure the handle is not kept (it is reset before
    /// its next use).
    func makeHop(on easy: CurlEasy) -> NetworkError? {
        if let invalid = rules.check(url: current.url) ?? rules.check(currentBody, method: current.httpMethod) { return invalid }
        guard let url = current.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return .transport(URLError(.unsupportedURL))
        }
        // The trust setting is checked before anything else: an unusable one sends nothing.
        if let refusal = trust.refusal { return .unsupportedTrustPolicy(reason: refusal) }
        // Each hop is judged by the policy of the host it goes to (a redirect's too), and routed by it.
        let tls = scheme == "https" ? trust.options(for: url.host ?? "") : nil
        let route = proxies.usesProxy ? proxies.route(for: url) : .direct
        if case .unusable(let reason) = route { return .proxyFailed(reason: reason) }
        self.easy = easy
        resetResponse()
        refusedOption = nil
        let plainGet = (current.httpMethod ?? "GET") == "GET" && currentBody.isEmpty
        // A handle last set for a plain GET keeps those options for the next plain GET with the same
        // trust options; anything else starts from libcurl's defaults.
        if easy.options == .other || (easy.options == .plainGet && !plainGet) || easy.trust !== tls {
            curl.easyReset(easy.handle)
            easy.options = .defaults
            easy.trust = nil
        }
        if easy.options == .defaults { setSharedOptions(easy) }
        easy.options = plainGet ? .plainGet : .other
        let handle = easy.handle
        if let tls, easy.trust !== tls {
            if let refused = tls.apply(to: handle, curl: curl) {
                easy.options = .other  // partly set: reset before the next hop
                self.easy = nil
                return .unsupportedTrustPolicy(reason: refused)
            }
            easy.trust = tls
        }
        configureProxy(handle, route)
        let me = Unmanaged.passUnretained(self).toOpaque()
        setString(CurlConstant.optURL, url.absoluteString)
        check(curl.setPointer(handle, CurlConstant.optHeaderData, me), CurlConstant.optHeaderData)
        check(curl.setPointer(handle, CurlConstant.optWriteData, me), CurlConstant.optWriteData)
        // Waiting for a connection that may multiplex only pays where HTTP/2 can be agreed (https, by
        // ALPN). In clear text it made concurrent sends to one host wait for the first one's response.
        check(curl.setLong(handle, CurlConstant.optPipeWait, scheme == "https" ? 1 : 0), CurlConstant.optPipeWait)
        // The idle timeout is the loop's timer (`lastActivity`), from the hop's start: a wait for a free
        // connection, connecting and the server's silence all count, as on URLSession. Without one, the
        // connect may take as long as URLSession's longest (not libcurl's default of 300 s).
        let connectMilliseconds = max(1, Int(((idleTimeout ?? IdleTimeouts.longest) * 1000).rounded(.up)))
        check(curl.setLong(handle, CurlConstant.optConnectTimeoutMS, connectMilliseconds), CurlConstant.optConnectTimeoutMS)
        lastActivity = DispatchTime.now().uptimeNanoseconds
        reportedUpload = 0
        do {
            try configureMethodAndBody(handle, context: me)
        } catch {
            self.easy = nil
            return error
        }
        configureHeaders(handle)
        if let refused = refusedOption {
            // Never a hop with an option missing: the handle is reset before its next use.
            easy.options = .other
            self.easy = nil
            let reason = "libcurl \(curl.version) refused option \(refused.option): \(curl.describe(refused.code))"
            return refused.option == CurlConstant.optURL ? .invalidRequest(reason: reason) : .transport(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: reason]))
        }
        return nil
    }

    /// Routes the hop: through its proxy (with the proxy's credentials), or straight. libcurl never
    /// reads the environment itself: `""` turns its own proxy variables off, and the transport's
    /// ``ProxyRoutes`` decided (once per transport) what they mean.
    func configureProxy(_ handle: CurlLibrary.Handle, _ route: ProxyRoutes.Route) {
        if case .through(let proxy) = route {
            hopProxy = proxy
            setString(CurlConstant.optProxy, proxy.url)
            let credentials = proxy.credentials
            check(curl.setPointer(handle, CurlConstant.optProxyUserName, nil as UnsafeRawPointer?), CurlConstant.optProxyUserName)
            check(curl.setPointer(handle, CurlConstant.optProxyPassword, nil as UnsafeRawPointer?), CurlConstant.optProxyPassword)
            if let credentials {
                setString(CurlConstant.optProxyUserName, credentials.user)
                setString(CurlConstant.optProxyPassword, credentials.password)
            }
        } else {
            hopProxy = nil
            // A new or reset handle was told "" (setSharedOptions); one this transport may have proxied
            // before is told again.
            if proxies.usesProxy { setString(CurlConstant.optProxy, "") }
        }
    }

    /// The options every hop has alike, set on a new or reset handle.
    func setSharedOptions(_ easy: CurlEasy) {
        let handle = easy.handle
        check(curl.setPointer(handle, CurlConstant.optErrorBuffer, easy.errorBuffer), CurlConstant.optErrorBuffer)
        check(curl.setLong(handle, CurlConstant.optNoSignal, 1), CurlConstant.optNoSignal)
        check(curl.setLong(handle, CurlConstant.optNoProgress, 1), CurlConstant.optNoProgress)
        check(curl.setLong(handle, CurlConstant.optFollowLocation, 0), CurlConstant.optFollowLocation)
        // libcurl's own reading of the proxy variables off, `no_proxy` too (libcurl reads it even for a
        // proxy set explicitly): the transport's ProxyRoutes decide.
        check("".withCString { curl.setPointer(handle, CurlConstant.optProxy, $0) }, CurlConstant.optProxy)
        check("".withCString { curl.setPointer(handle, CurlConstant.optNoProxy, $0) }, CurlConstant.optNoProxy)
        // A proxy's answer to CONNECT (`200 Connection established`) is not the response's head.
        check(curl.setLong(handle, CurlConstant.optSuppressConnectHeaders, 1), CurlConstant.optSuppressConnectHeaders)
        check(curl.setLong(handle, CurlConstant.optProtocols, CurlConstant.protocolsHTTP), CurlConstant.optProtocols)
        // HTTP/2 where TLS agrees on it, when libcurl was built with it (the option fails otherwise).
        if curl.supportsHTTP2 { check(curl.setLong(handle, CurlConstant.optHTTPVersion, CurlConstant.httpVersion2TLS), CurlConstant.optHTTPVersion) }
        check(curl.setLong(handle, CurlConstant.optTCPKeepAlive, 1), CurlConstant.optTCPKeepAlive)
        // Every encoding libcurl was built with (gzip, deflate, br…), advertised and decoded.
        check("".withCString { curl.setPointer(handle, CurlConstant.optAcceptEncoding, $0) }, CurlConstant.optAcceptEncoding)
        check(
            curl.setPointer(handle, CurlConstant.optHeaderFunction, unsafeBitCast(Self.onHeader as CurlLibrary.DataCallback, to: UnsafeRawPointer.self)),
            CurlConstant.optHeaderFunction)
        check(
            curl.setPointer(handle, CurlConstant.optWriteFunction, unsafeBitCast(Self.onBody as CurlLibrary.DataCallback, to: UnsafeRawPointer.self)), CurlConstant.optWriteFunction
        )
    }

    func configureMethodAndBody(_ easy: CurlLibrary.Handle, context: UnsafeMutableRawPointer) throws(NetworkError) {
        let method = current.httpMethod ?? "GET"
        upload = nil
        bytesSent = 0
        let length = currentBody.isEmpty ? 0 : currentBody.length
        switch (method, currentBody.isEmpty) {
        case ("GET", true):
            check(curl.setLong(easy, CurlConstant.optHTTPGet, 1), CurlConstant.optHTTPGet)
        case ("HEAD", true):
            check(curl.setLong(easy, CurlConstant.optNoBody, 1), CurlConstant.optNoBody)
        default:
            // A body (possibly empty) with any method: POST's machinery, the method named.
            check(curl.setLong(easy, CurlConstant.optPost, 1), CurlConstant.optPost)
            upload = try UploadSource(currentBody)
            check(curl.setOffset(easy, CurlConstant.optPostFieldSizeLarge, length ?? 0), CurlConstant.optPostFieldSizeLarge)
            check(
                curl.setPointer(easy, CurlConstant.optReadFunction, unsafeBitCast(Self.onRead as CurlLibrary.DataCallback, to: UnsafeRawPointer.self)), CurlConstant.optReadFunction
            )
            check(curl.setPointer(easy, CurlConstant.optReadData, context), CurlConstant.optReadData)
            // libcurl asks for the body a buffer at a time (64 KiB): its progress says when bytes go out.
            if idleTimeout != nil {
                check(curl.setLong(easy, CurlConstant.optNoProgress, 0), CurlConstant.optNoProgress)
                check(
                    curl.setPointer(easy, CurlConstant.optXferInfoFunction, unsafeBitCast(Self.onTransferInfo as CurlLibrary.TransferInfoCallback, to: UnsafeRawPointer.self)),
                    CurlConstant.optXferInfoFunction)
                check(curl.setPointer(easy, CurlConstant.optXferInfoData, context), CurlConstant.optXferInfoData)
            }
            if method != "POST" { setString(CurlConstant.optCustomRequest, method) }
        }
    }

    func configureHeaders(_ easy: CurlLibrary.Handle) {
        var lines: [CurlHeaderList.Line] = []
        let given = current.allHTTPHeaderFields ?? [:]
        lines.reserveCapacity(given.count + 3)
        // The framing is libcurl's, from the body it sends (a hand-set length could only be wrong).
        var hasUserAgent = false
        for (name, value) in given where !TransferRules.isRequestFraming(name) {
            // libcurl drops `Name:` (it removes a header of its own so); `Name;` sends it empty.
            lines.append(TransferRules.isBlankValue(value) ? .empty(name) : .field(name, value))
            if !hasUserAgent, TransferRules.isUserAgent(name) { hasUserAgent = true }
        }
        if !hasUserAgent { lines.append(.line(Self.defaultUserAgentLine)) }
        if !given.keys.contains(where: { $0.caseInsensitiveEquals("Cookie") }),
            current.httpShouldHandleCookies, let jar = cookieJar, let url = current.url,
            let cookie = TransportCookies.field(from: jar, for: url)
        {
            lines.append(.field("Cookie", cookie))
        }
        // No `Expect: 100-continue` wait before a body (URLSession sends none either). A body without a
        // `Content-Type` gets the one URLSession gives it, on every platform: a POST's non-empty body is
        // `application/x-www-form-urlencoded` (libcurl's POST machinery says so too), any other none
        // (that machinery would add it to a PUT's as well).
        lines.append(.line("Expect:"))
        if upload != nil, !given.keys.contains(where: { $0.caseInsensitiveEquals("Content-Type") }) {
            let post = (current.httpMethod ?? "GET").uppercased() == "POST" && !currentBody.isEmpty
            lines.append(post ? .field("Content-Type", "application/x-www-form-urlencoded") : .line("Content-Type:"))
        }
        headerList.free()
        headerList = CurlHeaderList(lines)
        check(curl.setPointer(easy, CurlConstant.optHTTPHeader, headerList.pointer), CurlConstant.optHTTPHeader)
    }

    static let defaultUserAgentLine = "User-Agent: " + UserAgent.default

    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    func setString(_ option: Int32, _ value: String) {
        // libcurl copies string options.
        check(value.withCString { curl.setPointer(easy?.handle, option, $0) }, option)
    }

    /// The first option libcurl refused while the current hop was set up (its number and code).
    var refusedOption: (option: Int32, code: Int32)?

    /// Notes an option libcurl refused: the hop is not started (``makeHop(on:)`` says why).
    func check(_ code: Int32, _ option: Int32) {
        if code != CurlConstant.ok, refusedOption == nil { refusedOption = (option, code) }
    }

    /// Ends the current hop (after it left the multi handle): frees its header list and hands back its
    /// easy handle, for the loop to reuse.
    func releaseHop() -> CurlEasy? {
        headerList.free()
        defer { easy = nil }
        upload = nil
        return easy
    }

    func resetResponse() {
        mode = .head
        status = 0
        fields = []
        head = nil
        headComplete = false
        data = Data()
        pending = Data()
        bytesReceived = 0
        expectedToReceive = nil
        easy?.errorBuffer[0] = 0
    }

    /// The hop ended with libcurl's `code`: follow, or end the transfer.
    func hopEnded(_ code: Int32) -> HopEnd {
        // What arrived is in the destination file before the transfer ends, whatever the outcome: a
        // download cut off resumes from it.
        let unwritten = flush()
        switch mode {
        case .failed(let error):
            return .finished(.failure(error))
        case .followWith(let next, let body) where code == CurlConstant.ok:
            current = next
            currentBody = body
            return .next
        default:
            break
        }
        guard code == CurlConstant.ok else {
            if let proxy = hopProxy, CurlErrors.trustCheck(code, errorMessage.lowercased()) == nil,
                let failure = CurlErrors.proxyFailure(code, message: errorMessage, curl: curl, proxy: proxy.address)
            {
                return .finished(.failure(failure))
            }
            return .finished(
                .failure(
                    CurlErrors.map(
                        code, message: errorMessage, curl: curl, idleTimeout: idleTimeout ?? IdleTimeouts.longest, received: bytesReceived, expected: expectedToReceive,
                        host: current.url?.host ?? "")))
        }
        guard let head else { return .finished(.failure(Self.closedBeforeTheHead)) }
        if let unwritten { return .finished(.failure(unwritten)) }
        if let short = rules.verifyComplete(head, for: current, receivedBytes: bytesReceived) { return .finished(.failure(short)) }
        let timing = Timing(start: start, timeToFirstByte: firstByte ?? 0, duration: Date().timeIntervalSince(start))
        switch request.destination {
        case .memory:
            return .finished(.success(TransportResponse(head: head, data: data, timing: timing)))
        case .file(let url, _):
            try? file?.close()
            file = nil
            return .finished(.success(TransportResponse(head: head, fileURL: url, bodyLength: bytesReceived, timing: timing)))
        }
    }

    var errorMessage: String { easy?.errorMessage ?? "" }
}
#endif
