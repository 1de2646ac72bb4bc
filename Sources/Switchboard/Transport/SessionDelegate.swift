import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The URLSession delegate: collects each task's body on the serial delegate queue and ends the task.
///
/// `@unchecked Sendable`: its only mutable state is `transfers`, inside the lock wrapper (`outgoing`
/// is an immutable `Sendable` value); `NSObject` keeps the compiler from checking that itself.
final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// Locked: a first hop is registered on the sender's thread; the delegate queue looks up and removes; tests count.
    private let transfers = Locked<[Int: TransferState]>([:])
    /// How each hop's header fields are readied (the `User-Agent` it adds, if any).
    let outgoing: OutgoingFields
    /// The cookie jar, and how the delegate keeps it.
    let cookies: SessionCookies

    init(userAgent: String?, cookies: SessionCookies) {
        outgoing = OutgoingFields(userAgent: userAgent)
        self.cookies = cookies
    }

    /// How many tasks URLSession has not yet reported complete (a cancelled one counts until its
    /// report comes): for the package's tests, which wait for that before stopping a server.
    var unreportedTasks: Int { transfers.withLock { $0.count } }

    /// Starts a task for the current hop of `state` (its first, or one after a redirect). Called from
    /// `perform` on the caller's thread for the first hop, on the delegate queue for the others; a
    /// failure to start is reported on `queue`, never from inside `perform`.
    func start(_ state: TransferState, in session: URLSession, queue: DispatchQueue? = nil) {
        // Making and resuming a task waits for FoundationNetworking's queue: on the delegate's queue
        // (a redirect's next hop, a group's next request, a download's restart), flow control is off meanwhile.
        if let delegateQueue = session.delegateQueue as? DelegateQueue, delegateQueue.isCurrent {
            delegateQueue.withoutFlowControl { startTask(state, in: session, queue: queue) }
        } else {
            startTask(state, in: session, queue: queue)
        }
    }

    private func startTask(_ state: TransferState, in session: URLSession, queue: DispatchQueue?) {
        var request = state.currentRequest
        let task: URLSessionTask
        if let invalid = state.rules.check(url: request.url) ?? state.rules.check(state.currentBody, method: request.httpMethod) {
            fail(state, invalid, queue: queue)
            return
        }
        // The jar's cookies on the hop sent, never on `currentRequest` (the next hop is made from it).
        outgoing.prepare(&request, jarCookie: SessionCookies.keptByDelegate ? cookies.field(for: request) : nil)
        switch state.currentBody {
        case .none:
            // Only set when it changes: a change copies the whole request on Linux.
            if request.httpBody != nil || request.httpBodyStream != nil {
                request.httpBody = nil
                request.httpBodyStream = nil
            }
            task = session.dataTask(with: request)
        case .data(let data):
            if request.httpBody != data { request.httpBody = data }
            task = session.dataTask(with: request)
        case .file(let url):
            // FoundationNetworking sets the Content-Length from the file's size.
            task = session.uploadTask(with: request, fromFile: url)
        case .stream(_, let open):
            // Sent chunked (FoundationNetworking sends a streamed body with `Transfer-Encoding: chunked`).
            do {
                request.httpBodyStream = try open()
            } catch {
                fail(state, .invalidRequest(reason: "the body stream could not be opened: \(error)"), queue: queue)
                return
            }
            task = session.dataTask(with: request)
        }
        // Setting it waits for FoundationNetworking's work queue on Linux (a context switch when that
        // queue is busy), so only when it isn't the default.
        if state.options.priority != URLSessionTask.defaultPriority { task.priority = state.options.priority }
        state.currentTask = task
        state.session = session
        transfers.withLock { $0[task.taskIdentifier] = state }
        task.resume()
    }

    /// Ends a transfer that could not start: on `queue` when called from `perform` (never from inside it).
    private func fail(_ state: TransferState, _ error: NetworkError, queue: DispatchQueue?) {
        if let queue { queue.async { state.finish(.failure(error)) } } else { state.finish(.failure(error)) }
    }

    private func state(for task: URLSessionTask) -> TransferState? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    /// Cancels `task`. On the delegate queue (as every cancel here is: off it, a cancel can land as the
    /// task completes and hit FoundationNetworking's "task not in the registry" crash), with the
    /// delegate queue's flow control off meanwhile: `cancel()` may wait for FoundationNetworking's own
    /// queue, which must not be waiting for room on ours then (see ``DelegateQueue``).
    static func cancel(_ task: URLSessionTask, in session: URLSession) {
        if let queue = session.delegateQueue as? DelegateQueue {
            queue.whereSafe { task.cancel() }
        } else {
            task.cancel()
        }
    }

    // MARK: Response and body

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let state = state(for: dataTask), !state.isFinished else {
            completionHandler(.cancel)
            Self.cancel(dataTask, in: session)
            return
        }
        let head = response as? HTTPURLResponse
        // A head that breaks the message syntax ends the transfer before its body: libcurl (under
        // FoundationNetworking) reads `Content-Length: 2x` as 2, and with two lengths that disagree
        // waits on an open connection for bytes that never come.
        if let head, let problem = ResponseFraming.problem(in: head) {
            state.failure = .malformedResponse(reason: problem)
            completionHandler(.cancel)
            Self.cancel(dataTask, in: session)
            return
        }
        // A redirect followed by hand stored its cookies when it was asked to follow.
        if SessionCookies.keptByDelegate, let head, state.pendingRedirect == nil { cookies.store(from: head, for: state.currentRequest) }
        completionHandler(.allow)
        state.firstByteTime = DispatchTime.now().uptimeNanoseconds
        state.response = head
        // A new response (after a challenge or a redirect with a body) restarts the body.
        state.data = Data()
        state.bytesReceived = 0
        // A redirect followed by hand (its body is not the answer), or a 401 that a challenge may yet
        // replace (FoundationNetworking reports its head before the challenge): the head is not final.
        guard let head, state.pendingRedirect == nil else { return }
        if head.statusCode == 401, state.options.credentials != nil {
            state.isProvisional = true
            return
        }
        state.isProvisional = false
        if let failure = state.acceptHead(head) {
            state.failure = failure
            Self.cancel(dataTask, in: session)  // `.cancel` is ignored on Linux: the body would still arrive.
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // A redirect followed by hand: its body is not the answer (no progress, no size limit for it).
        guard let state = state(for: dataTask), !state.isFinished, state.failure == nil, state.pendingRedirect == nil else { return }
        if let failure = state.receive(data) {
            state.failure = failure
            Self.cancel(dataTask, in: session)
            return
        }
        state.callbacks.progress?(state.progressSnapshot())
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        guard let state = state(for: task), !state.isFinished else { return }
        state.bytesSent += bytesSent  // our own count: URLSession's totals are unreliable on Linux
        if totalBytesExpectedToSend > 0 { state.expectedBytesToSend = totalBytesExpectedToSend }
        state.callbacks.progress?(state.progressSnapshot())
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping (InputStream?) -> Void) {
        guard let state = state(for: task), case .stream(_, let open) = state.currentBody else { return completionHandler(nil) }
        completionHandler(try? open())
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let state = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        guard !state.isFinished else { return }
        // The next hop of a redirect followed by hand, unless this one failed (a timeout, a connection
        // lost while its head or body came): that ends the transfer, as on libcurl.
        if let next = state.pendingRedirect, state.failure == nil, error == nil {
            state.pendingRedirect = nil
            state.response = nil
            state.data = Data()
            state.bytesReceived = 0
            state.bytesSent = 0
            // What the next hop sends: its own body (none after a 303, or a 301/302 that turned a POST into a GET).
            state.expectedBytesToSend = next.body.length
            state.currentRequest = next.request
            state.currentBody = next.body
            start(state, in: session)
            return
        }
        // A 3xx that FoundationNetworking couldn't follow (no `Location`) is shown to no callback.
        if state.response == nil, error == nil, let head = task.response as? HTTPURLResponse { storeCookies(of: head, in: state) }
        state.finish(Self.result(of: state, error: error))
    }

    /// Stores the cookies of a head no other check has seen: not when its framing is broken, as on libcurl.
    private func storeCookies(of head: HTTPURLResponse, in state: TransferState) {
        if ResponseFraming.problem(in: head) == nil { cookies.store(from: head, for: state.currentRequest) }
    }

    private static func result(of state: TransferState, error: (any Error)?) -> Result<TransportResponse, NetworkError> {
        if let failure = state.failure { return .failure(failure) }
        if let error {
            let urlError = error as? URLError ?? URLError(.unknown, userInfo: [NSUnderlyingErrorKey: error])
            var code = urlError.code
            if [.unknown, .unsupportedURL, .badServerResponse].contains(code), let specific = specificCode(for: urlError, state: state) { code = specific }
            // libcurl refuses a status line it can't read (a four-digit code) as an unsupported
            // protocol, which FoundationNetworking reports as `unsupportedURL`; the URL itself was
            // http or https, and no head came.
            if code == .unsupportedURL, state.response == nil, let scheme = state.currentRequest.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" {
                code = .badServerResponse
            }
            // FoundationNetworking reports a refused certificate as an unknown error with libcurl's
            // words: the same typed error as the libcurl transport's.
            let message = urlError.localizedDescription.lowercased()
            let untrusted: Set<URLError.Code> = [
                .unknown, .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
                .serverCertificateNotYetValid, .clientCertificateRejected, .clientCertificateRequired, .networkConnectionLost,
            ]
            if untrusted.contains(urlError.code), let check = TrustFailure.Check.named(inTLSMessage: message) {
                return .failure(.serverTrustFailed(TrustFailure(host: state.currentRequest.url?.host ?? "", check: check, reason: urlError.localizedDescription)))
            }
            switch code {
            case .badServerResponse, .cannotParseResponse:
                return .failure(.malformedResponse(reason: urlError.localizedDescription))
            case _ where code != urlError.code:
                return .failure(.transport(URLError(code, userInfo: [NSUnderlyingErrorKey: error, NSLocalizedDescriptionKey: urlError.localizedDescription])))
            case .cancelled: return .failure(.cancelled)
            case .timedOut: return .failure(.idleTimeout(after: state.options.idleTimeout ?? state.currentRequest.timeoutInterval))
            default: return .failure(.transport(urlError))
            }
        }
        guard let response = state.response else {
            // FoundationNetworking shows no 3xx head to the delegate, and ends a 3xx without a
            // `Location` without an error: the only way here (a head cut off by a close crashes it).
            return .failure(.malformedResponse(reason: "the transfer ended without a final response head (a redirect without a Location)"))
        }
        if state.isProvisional {
            // A 401 no challenge followed: it is the answer after all. Its body, held in memory, goes
            // to the destination now.
            state.isProvisional = false
            let buffered = state.data
            if let failure = state.acceptHead(response) { return .failure(failure) }
            if state.file != nil {
                state.data = Data()
                state.bytesReceived = 0
                if let failure = state.receive(buffered) { return .failure(failure) }
            }
        }
        if let short = state.rules.verifyComplete(response, for: state.currentRequest, receivedBytes: state.bytesReceived) {
            return .failure(short)
        }
        return .success(state.transportResponse(response))
    }

    /// FoundationNetworking reports most of libcurl's failures as an unknown error (-1) and keeps only
    /// libcurl's message; say what happened: a body cut short, a broken chunked encoding, a body that
    /// can't be decompressed.
    private static func specificCode(for error: URLError, state: TransferState) -> URLError.Code? {
        let message = error.localizedDescription.lowercased()
        if message.contains("unencoding") || message.contains("content encoding") || message.contains("decompress") {
            return .cannotDecodeContentData
        }
        if message.contains("chunk") { return .cannotParseResponse }
        if message.contains("empty reply") { return .networkConnectionLost }
        if message.contains("http version") || message.contains("http/0.9") || message.contains("weird server reply") || message.contains("header")
            || message.contains("content-length") || message.contains("status line")
        {
            return .badServerResponse
        }
        if message.contains("transfer closed") || message.contains("outstanding read data") { return .networkConnectionLost }
        if let expected = state.expectedBytesToReceive, state.bytesReceived < expected { return .networkConnectionLost }
        return nil
    }

    // MARK: Redirects

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        guard let state = state(for: task) else { return completionHandler(request) }
        // Whatever the decision, as libcurl's transport does (a 3xx delivered as the answer is stored
        // again when its head is reported, which changes nothing).
        storeCookies(of: response, in: state)
        switch state.rules.redirect(from: state.currentRequest, response: response, to: request.url, followed: state.redirectCount) {
        case .deliver:
            // Not following: the task ends with this 3xx as its response.
            completionHandler(nil)
        case .fail(let error):
            state.failure = error
            completionHandler(nil)
            Self.cancel(task, in: session)
        case .follow(let next):
            state.redirectCount += 1
            let body: TransferBody = next.httpMethod == state.currentRequest.httpMethod ? state.currentBody : .none
            if !body.isEmpty || state.options.credentials != nil {
                // This task ends with the redirect response; didCompleteWithError starts the next hop
                // as a new task (which gets the jar's cookies as it starts, unless it has its own) when:
                // - it has a body: URLSession on Linux keeps the method of a 307/308 but sends an empty
                //   body;
                // - the transfer may answer a challenge: once a task has answered one, FoundationNetworking
                //   sends every later hop of it as its first request with the credentials (its
                //   `authRequest`), whatever the redirect said, and a hop after a redirect that asks for
                //   credentials gets the first hop's request back. A task of its own per hop has one URL.
                state.pendingRedirect = (next, body)
                return completionHandler(nil)
            }
            state.currentRequest = next
            state.currentBody = .none
            // FoundationNetworking sends this hop as it is: with the jar's cookies as they are now (this
            // redirect's included), unless it has the app's own `Cookie`.
            var hop = next
            outgoing.prepare(&hop, jarCookie: cookies.field(for: hop))
            completionHandler(hop)
        }
    }

    // MARK: Authentication

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let method = challenge.protectionSpace.authenticationMethod
        if Self.isServerChallenge(method) {
            return completionHandler(.performDefaultHandling, nil)
        }
        guard let state = state(for: task) else {
            return completionHandler(.cancelAuthenticationChallenge, nil)
        }
        // Never `.useCredential` with nil (that crashes on Linux) and never `.performDefaultHandling`
        // (the task then hangs on Linux).
        let space = challenge.protectionSpace
        let failed = challenge.failureResponse as? HTTPURLResponse ?? state.response
        let decision = state.rules.answerChallenge(
            original: state.request.urlRequest,
            current: state.currentRequest,
            host: space.host,
            port: space.port,
            previousFailures: challenge.previousFailureCount,
            response: failed
        )
        switch decision {
        case .answer(let credentials):
            state.isProvisional = false
            // The hops that follow are made from this request, as on libcurl: the credentials go on
            // with them to the same origin (the redirect rules strip them elsewhere), and a second
            // challenge fails rather than sending them again.
            state.currentRequest.setValue(credentials.authorizationHeader, forHTTPHeaderField: "Authorization")
            let credential = URLCredential(user: credentials.user, password: credentials.password, persistence: .forSession)
            completionHandler(.useCredential, credential)
        case .fail(let error):
            state.failure = error
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    /// TLS challenges (server trust, client certificates) are left to the system; they exist only
    /// with the Darwin Security framework.
    private static func isServerChallenge(_ method: String) -> Bool {
        #if canImport(Darwin)
        method == NSURLAuthenticationMethodServerTrust || method == NSURLAuthenticationMethodClientCertificate
        #else
        false
        #endif
    }
}
