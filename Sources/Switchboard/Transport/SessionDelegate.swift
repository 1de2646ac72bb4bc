import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The URLSession delegate: collects each task's body on the serial delegate queue and ends the task.
///
/// `@unchecked Sendable`: its only state is `transfers`, inside the lock wrapper; `NSObject` keeps the
/// compiler from checking that itself.
final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let transfers = Locked<[Int: TransferState]>([:])

    /// Starts a task for `request` on behalf of `state` (its first, or one after a redirect).
    func start(_ request: URLRequest, for state: TransferState, in session: URLSession) {
        let task = session.dataTask(with: request)
        // Setting it waits for FoundationNetworking's work queue on Linux (a context switch when that
        // queue is busy), so only when it isn't the default.
        if state.options.priority != URLSessionTask.defaultPriority { task.priority = state.options.priority }
        state.currentTask = task
        transfers.withLock { $0[task.taskIdentifier] = state }
        task.resume()
    }

    private func state(for task: URLSessionTask) -> TransferState? {
        transfers.withLock { $0[task.taskIdentifier] }
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
            dataTask.cancel()
            return
        }
        state.firstByteTime = DispatchTime.now().uptimeNanoseconds
        state.response = response as? HTTPURLResponse
        // A new response (after a challenge or a redirect with a body) restarts the body.
        state.data = Data()
        let limit = state.options.maximumResponseSize
        if !state.hasNoBody, response.expectedContentLength > Int64(limit) {
            state.failure = .responseTooLarge(limit: limit)
            completionHandler(.allow)
            dataTask.cancel()  // `.cancel` is ignored on Linux: the body would still arrive.
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let state = state(for: dataTask), !state.isFinished, state.failure == nil else { return }
        if state.data.count + data.count > state.options.maximumResponseSize {
            state.failure = .responseTooLarge(limit: state.options.maximumResponseSize)
            dataTask.cancel()
            return
        }
        state.data.append(data)
        state.progress?(state.progressSnapshot())
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
        state.progress?(state.progressSnapshot())
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let state = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        guard !state.isFinished else { return }
        if let next = state.pendingRedirect, state.failure == nil {
            state.pendingRedirect = nil
            state.response = nil
            state.data = Data()
            state.currentRequest = next
            start(next, for: state, in: session)
            return
        }
        state.finish(Self.result(of: state, error: error))
    }

    private static func result(of state: TransferState, error: (any Error)?) -> Result<TransportResponse, NetworkError> {
        if let failure = state.failure { return .failure(failure) }
        if let error {
            let urlError = error as? URLError ?? URLError(.unknown, userInfo: [NSUnderlyingErrorKey: error])
            if [.unknown, .unsupportedURL, .badServerResponse].contains(urlError.code), let specific = specificCode(for: urlError, state: state), specific != urlError.code {
                return .failure(.transport(URLError(specific, userInfo: [NSUnderlyingErrorKey: error, NSLocalizedDescriptionKey: urlError.localizedDescription])))
            }
            switch urlError.code {
            case .cancelled: return .failure(.cancelled)
            case .timedOut: return .failure(.idleTimeout(after: state.currentRequest.timeoutInterval))
            default: return .failure(.transport(urlError))
            }
        }
        guard let response = state.response else {
            return .failure(.transport(URLError(.badServerResponse)))
        }
        // A body shorter than an uncompressed Content-Length means the server closed mid-body. (The
        // cheap length comparison first: it is what spares most responses the header lookup.)
        if Int64(state.data.count) < response.expectedContentLength, let expected = state.expectedBytesToReceive,
            Int64(state.data.count) < expected
        {
            return .failure(.transport(URLError(.networkConnectionLost)))
        }
        return .success(TransportResponse(httpResponse: response, data: state.data, timing: state.timing()))
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
        if message.contains("http version") || message.contains("http/0.9") || message.contains("weird server reply") || message.contains("header") {
            return .badServerResponse
        }
        if message.contains("transfer closed") || message.contains("outstanding read data") { return .networkConnectionLost }
        if let expected = state.expectedBytesToReceive, Int64(state.data.count) < expected { return .networkConnectionLost }
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
        let rules = state.options.redirects
        // Not following: the task ends with this 3xx as its response.
        if rules.maximumCount == 0 { return completionHandler(nil) }
        state.redirectCount += 1
        if state.redirectCount > rules.maximumCount {
            state.failure = .transport(URLError(.httpTooManyRedirects))
            completionHandler(nil)
            task.cancel()
            return
        }
        guard let url = request.url else { return completionHandler(nil) }
        // Only the allowed schemes (http and https by default): FoundationNetworking would follow
        // `file:` or `data:` as a path on the same server, and `ftp:` elsewhere.
        let scheme = response.value(forHTTPHeaderField: "Location").flatMap(URLResolver.scheme(of:))?.lowercased() ?? url.scheme?.lowercased() ?? ""
        if !rules.allowedSchemes.contains(scheme) || !["http", "https"].contains(scheme) {
            state.failure = .transport(URLError(.unsupportedURL, userInfo: [
                NSLocalizedDescriptionKey: "redirect to a \(scheme): URL refused (followed: \(rules.allowedSchemes.sorted().joined(separator: ", ")))",
            ]))
            completionHandler(nil)
            task.cancel()
            return
        }
        var next = RedirectPolicy.next(after: state.currentRequest, status: response.statusCode, to: url)
        storeCookies(from: response, in: session)
        if RedirectPolicy.needsManualFollow(next) {
            // Let this task end with the redirect response; didCompleteWithError starts the next one,
            // as a new task, which gets the jar's cookies from the session itself.
            if !state.setsOwnCookie { next.setValue(nil, forHTTPHeaderField: "Cookie") }
            state.pendingRedirect = next
            return completionHandler(nil)
        }
        if !state.setsOwnCookie { setJarCookies(on: &next, in: session) }
        state.currentRequest = next
        completionHandler(next)
    }

    /// Stores the cookies a redirect response sets (FoundationNetworking stores them too; storing again
    /// replaces them with themselves), so the next hop can carry them.
    private func storeCookies(from response: HTTPURLResponse, in session: URLSession) {
        let configuration = session.configuration
        guard configuration.httpShouldSetCookies, configuration.httpCookieAcceptPolicy != .never,
            let storage = configuration.httpCookieStorage, let from = response.url
        else { return }
        let fields = response.allHeaderFields.reduce(into: [String: String]()) { fields, field in
            if let name = field.key as? String, let value = field.value as? String { fields[name] = value }
        }
        let set = HTTPCookie.cookies(withResponseHeaderFields: fields, for: from)
        if !set.isEmpty { storage.setCookies(set, for: from, mainDocumentURL: nil) }
    }

    /// Sets the next hop's `Cookie` header from the jar as it is now (cookies set by this redirect
    /// included; with a redirect delegate FoundationNetworking doesn't send them on the next hop), for
    /// the next hop's own URL. Recomputed at every hop, so a changed cookie is sent with its new value.
    private func setJarCookies(on next: inout URLRequest, in session: URLSession) {
        next.setValue(nil, forHTTPHeaderField: "Cookie")
        let configuration = session.configuration
        guard configuration.httpShouldSetCookies, let storage = configuration.httpCookieStorage, let url = next.url,
            let cookies = storage.cookies(for: url), !cookies.isEmpty
        else { return }
        for (name, value) in HTTPCookie.requestHeaderFields(with: cookies) { next.setValue(value, forHTTPHeaderField: name) }
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
        // Answer once, and only when the credentials weren't already sent pre-emptively: a second
        // challenge means they were wrong. Never `.useCredential` with nil (that crashes on Linux) and
        // never `.performDefaultHandling` (the task then hangs on Linux).
        let alreadySent = state.currentRequest.value(forHTTPHeaderField: "Authorization") != nil
        // Only the request's own origin gets the credentials, never a host it was redirected to.
        let space = challenge.protectionSpace
        let sameOrigin = RedirectPolicy.isOrigin(of: state.request.url, host: space.host, port: space.port)
            && RedirectPolicy.sameOrigin(state.request.url, state.currentRequest.url)
        if let credentials = state.options.credentials, challenge.previousFailureCount == 0, !alreadySent, sameOrigin {
            let credential = URLCredential(user: credentials.user, password: credentials.password, persistence: .forSession)
            return completionHandler(.useCredential, credential)
        }
        let failed = challenge.failureResponse as? HTTPURLResponse ?? state.response
        state.failure = .unauthorized(
            ErrorResponse(
                statusCode: failed?.statusCode ?? 401,
                headers: failed.map(HTTPHeaders.init) ?? HTTPHeaders(),
                body: Data(),
                url: failed?.url ?? state.request.url
            )
        )
        completionHandler(.cancelAuthenticationChallenge, nil)
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
