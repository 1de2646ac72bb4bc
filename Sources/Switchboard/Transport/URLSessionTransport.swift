import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default transport: one `URLSession` with a serial delegate queue, whose delegate collects each
/// body, counts bytes, follows redirects safely and answers auth challenges. (The deadline is kept by
/// the dispatcher, above the transport.)
///
/// It handles the traps of URLSession on Linux: a concurrent delegate queue garbles bodies (the queue is
/// serial); an unanswered 401 Basic challenge hangs forever (every challenge is answered, never with a
/// nil credential); a 307/308 drops the POST body (Switchboard follows those itself, body and all);
/// credentials leak on a cross-origin redirect (they are stripped); cookies set by a redirect are not
/// sent on the next hop (they are).
///
/// Cookies follow ``Configuration/cookies``: none, an in-memory jar (the default), or the shared
/// `HTTPCookieStorage`. On Linux the transport keeps the jar itself, by the libcurl transport's rules:
/// each response head stores the cookies it sets (a `set-cookie` in any case; none from a head whose
/// framing is broken), each hop carries the jar's cookies unless it has a `Cookie` of its own, and a
/// request whose `httpShouldHandleCookies` is `false` does neither. (A challenge answered within a
/// task resends its first request, without the cookies the 401 set.) Nothing else is persisted: no URL
/// cache, no credential storage.
///
/// On Apple platforms (written for, not built or tested in this project's CI): TLS server-trust and
/// client-certificate challenges are left to the system; of ``Configuration/proxy`` only
/// ``ProxySetting/environment`` applies (the system's proxy settings), any other setting failing every
/// send with ``NetworkError/proxyFailed(reason:)``; a request's idle timeout goes to URLSession as it
/// is, not rounded up to whole seconds.
public final class URLSessionTransport: Transport {
    private let session: URLSession
    private let delegate: SessionDelegate

    /// How many of this transport's tasks URLSession has not yet reported complete (for tests).
    var unreportedTasks: Int { delegate.unreportedTasks }
    /// How many transfers have not yet returned from their completion (a redirect's next hop and a
    /// cancelled transfer included).
    /// Locked: senders add in `perform`, the delegate queue takes away after each completion, tests read.
    private let unfinished = Locked(0)
    /// How many transfers have not yet returned from their completion: for the package's tests, which
    /// wait for none (and for `unreportedTasks` to be 0) before they look for a late callback.
    var unfinishedTransfers: Int { unfinished.withLock { $0 } }
    /// The serial queue delegate callbacks, cancels and completions run on.
    let queue: DispatchQueue
    /// The jar whose cookies go on requests, `nil` with ``CookiePolicy/none``.
    private let cookieJar: HTTPCookieStorage?
    /// ``Configuration/idleTimeout``: the idle timeout of a transfer whose options name none.
    private let idleTimeout: TimeInterval
    /// Why every send fails: a ``Configuration/serverTrust`` other than the system's, which this
    /// transport can't apply (FoundationNetworking can't evaluate trust; the Apple challenge path is
    /// not built or tested here). `nil` with the default.
    private let trustRefusal: String?
    /// Why every send fails: a ``Configuration/proxy`` FoundationNetworking can't apply (it reads the
    /// environment's proxy variables on its own and takes no other). `nil` when it can.
    private let proxyRefusal: String?
    /// ``ProxySetting/none``: the proxy variables are looked at for every send (FoundationNetworking's
    /// libcurl reads them for every transfer, so one set later would be used).
    private let checksProxyVariables: Bool
    /// The settings it was made with (``Transport/applies(serverTrust:proxy:)``): it refuses every send
    /// under ones it can't apply.
    private let madeWith: (trust: ServerTrust, proxy: ProxySetting)

    /// Whether it was made with these settings (then it applies them, or refuses every send).
    public func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool {
        madeWith.trust == serverTrust && madeWith.proxy == proxy
    }

    /// The proxy variables set now (a few `getenv` calls, not a copy of the environment).
    static func proxyVariables() -> [String: String] {
        var found: [String: String] = [:]
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            if let value = getenv(name) { found[name] = String(cString: value) }
        }
        return found
    }

    /// Why `setting` can't be applied on this transport, or `nil`: an explicit proxy, or none while the
    /// environment names one (FoundationNetworking would use it anyway).
    static func proxyRefusal(_ setting: ProxySetting, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        #if canImport(FoundationNetworking)
        switch setting {
        case .environment:
            return nil
        case .http(let proxy):
            return
                "the URLSession transport on Linux can't be told a proxy (\(proxy)): FoundationNetworking reads only the environment; use the libcurl transport (TransportFactory.curl)"
        case .none:
            let names = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].filter { !(environment[$0] ?? "").isEmpty }
            guard let name = names.first else { return nil }
            return "ProxySetting.none, but \(name) is set and FoundationNetworking would use it: unset it, or use the libcurl transport"
        }
        #else
        // Apple's URLSession: the session's connectionProxyDictionary is not set by this package yet.
        if case .environment = setting { return nil }
        return "the URLSession transport applies only the system's proxy settings (ProxySetting.environment) in this release"
        #endif
    }

    /// Whether the session's `httpAdditionalHeaders` carry `Authorization`, `Proxy-Authorization` or
    /// `Cookie`: credentials on every request that the response cache can't key by.
    private let addsCredentialHeaders: Bool

    /// The session's cookie jar (``Configuration/cookies``), or none; ``TransportCookies/unknown``
    /// when the session's `httpAdditionalHeaders` carry `Authorization`, `Proxy-Authorization` or
    /// `Cookie` (every request then carries credentials the cache can't see, so none uses the cache).
    public var addedCookies: TransportCookies {
        if addsCredentialHeaders { return .unknown }
        return cookieJar.map { .jar($0) } ?? .none
    }

    /// Creates a transport from a configuration's transport settings.
    /// - Parameters:
    ///   - configuration: supplies ``Configuration/maximumConnectionsPerHost``,
    ///     ``Configuration/idleTimeout`` and ``Configuration/cookies``.
    ///   - sessionConfiguration: the base session settings; `.ephemeral` by default.
    public convenience init(configuration: Configuration = Configuration(), sessionConfiguration: URLSessionConfiguration = .ephemeral) {
        self.init(configuration: configuration, sessionConfiguration: sessionConfiguration, cookieJar: nil)
    }

    /// Creates a transport; `cookieJar` is the in-memory jar for ``CookiePolicy/inMemory`` (`nil`: a new one).
    init(configuration: Configuration, sessionConfiguration: URLSessionConfiguration = .ephemeral, cookieJar: HTTPCookieStorage?) {
        // A copy: URLSessionConfiguration is a class, and the caller's must not change.
        let settings = (sessionConfiguration.copy() as? URLSessionConfiguration) ?? sessionConfiguration
        settings.httpMaximumConnectionsPerHost = configuration.maximumConnectionsPerHost
        // FoundationNetworking reads it as a whole number of milliseconds for every task (NaN or
        // infinity trapped there): only a duration it can take.
        settings.timeoutIntervalForRequest = (IdleTimeouts.effective(configuration.idleTimeout) ?? IdleTimeouts.longest).rounded(.up)
        settings.urlCache = nil
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        settings.urlCredentialStorage = nil
        // The package's User-Agent (put on each request by the delegate), unless the session's settings
        // name one; a request's own wins.
        let additional = settings.httpAdditionalHeaders ?? [:]
        addsCredentialHeaders = additional.keys.contains { key in
            guard let name = key as? String else { return false }
            return HTTPHeaders.credentialNames.contains { name.caseInsensitiveEquals($0) }
        }
        let sessionNamesUserAgent = additional.keys.contains { ($0 as? String)?.caseInsensitiveEquals("User-Agent") == true }
        let jar: HTTPCookieStorage?
        switch configuration.cookies {
        case .none: jar = nil
        case .inMemory: jar = cookieJar ?? URLSessionConfiguration.ephemeral.httpCookieStorage
        case .shared: jar = HTTPCookieStorage.shared
        }
        // On Linux the delegate keeps the jar (SessionCookies), and the session has none.
        let systemJar = SessionCookies.keptByDelegate ? nil : jar
        settings.httpCookieStorage = systemJar
        settings.httpShouldSetCookies = systemJar != nil
        settings.httpCookieAcceptPolicy = systemJar != nil ? .always : .never
        self.cookieJar = jar
        idleTimeout = configuration.idleTimeout
        trustRefusal =
            configuration.serverTrust.isSystemDefault
            ? nil
            : "the URLSession transport applies only the system's trust (ServerTrust.system): FoundationNetworking on Linux can't evaluate a server's trust, and the Apple challenge path is not built yet; use the libcurl transport (TransportFactory.curl)"
        proxyRefusal = configuration.proxy == .none ? nil : Self.proxyRefusal(configuration.proxy)
        checksProxyVariables = configuration.proxy == .none
        madeWith = (configuration.serverTrust, configuration.proxy)
        queue = DispatchQueue(label: "switchboard.transport")
        let operationQueue = DelegateQueue(queue)
        delegate = SessionDelegate(userAgent: sessionNamesUserAgent ? nil : UserAgent.default, cookies: SessionCookies(jar: jar))
        session = URLSession(configuration: settings, delegate: delegate, delegateQueue: operationQueue)
    }

    deinit {
        let session = session
        (session.delegateQueue as? DelegateQueue)?.whereSafe { session.invalidateAndCancel() } ?? session.invalidateAndCancel()
    }

    /// Starts a transfer; see ``Transport/perform(_:options:callbacks:)``. A body from memory or a stream
    /// goes with a data task, a file with an upload task (read as it is sent); a file destination is
    /// written as the body arrives. Callbacks run on the transport's serial queue.
    public func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let proxyRefusal = checksProxyVariables ? Self.proxyRefusal(.none, environment: Self.proxyVariables()) : self.proxyRefusal
        if let refusal = trustRefusal.map(NetworkError.unsupportedTrustPolicy) ?? proxyRefusal.map(NetworkError.proxyFailed) {
            // Fails closed: nothing is sent under a trust or a route the app didn't ask for.
            let completion = callbacks.counted(in: unfinished).completion
            queue.async { completion(.failure(refusal)) }
            return RefusedTask()
        }
        var request = request
        // URLSession reads the idle timeout from the request (FoundationNetworking: once its
        // `timeoutInterval` was assigned, else the session's): the one IdleTimeouts chooses, as on libcurl.
        var options = options
        let idle = IdleTimeouts.chosen(options: options, request: request.urlRequest, configured: idleTimeout)
        options.idleTimeout = idle ?? .infinity
        #if canImport(FoundationNetworking)
        // FoundationNetworking counts it in whole seconds, cut down: 0.5 s fired at once, 1.5 s at 1 s.
        // Rounded up, it fires no early and less than a second late. None is the longest applied.
        let timeout = (idle ?? IdleTimeouts.longest).rounded(.up)
        #else
        let timeout = idle ?? IdleTimeouts.longest
        #endif
        // Assigned, unless known to be assigned with this very value (a dispatcher's standard request:
        // assigning copies the whole request's storage on Linux). A request made with
        // `URLRequest(url:timeoutInterval:)` is always assigned: FoundationNetworking applies its value
        // only once the setter has run.
        // (Not on a request without a URL: the change would copy it, and FoundationNetworking's copy
        // unwraps the URL. The delegate fails it before anything is sent, `TransferRules.check(url:)`.)
        if request.urlRequest.url != nil, !request.timeoutIntervalIsSet || request.urlRequest.timeoutInterval != timeout {
            request.urlRequest.timeoutInterval = timeout
        }
        let state = TransferState(request: request, options: options, callbacks: callbacks.counted(in: unfinished))
        delegate.start(state, in: session, queue: queue)
        return URLSessionTransportTask(state: state, queue: queue)
    }
}

/// A transfer refused before anything was sent: nothing to cancel (its completion is queued).
private struct RefusedTask: TransportTask {
    func cancel() {}
}

/// Cancels one transfer.
struct URLSessionTransportTask: TransportTask {
    let state: TransferState
    let queue: DispatchQueue

    /// Ends the transfer with `cancelled` on the transport's queue, after any progress callback already
    /// running there, so the completion is always the transfer's last callback.
    func cancel() {
        queue.async { [state] in
            if state.finish(.failure(.cancelled)) { state.cancelTask() }
        }
    }
}

/// The session's delegate queue: every delegate call runs on the transport's serial dispatch queue.
///
/// It is also the only flow control FoundationNetworking leaves us. Each received chunk becomes an
/// operation added here from FoundationNetworking's own queue, which is where libcurl reads the
/// socket; nothing else slows the reading when the delegate is slower than the network (a file written
/// slower than loopback delivers), so chunks would pile up in memory without bound. So when more than
/// ``backlogLimit`` operations wait, adding one waits (up to 50 ms each time) for the delegate to catch
/// up: libcurl stops reading and TCP slows the sender. The delegate queue itself never waits, and
/// it turns flow control off (``withoutFlowControl(_:)``) around the FoundationNetworking calls that
/// wait for that queue (cancelling, starting a redirect's task), so this can only delay, never deadlock.
///
/// `@unchecked Sendable`: its own state is `target` (immutable) and `backlog` (in a lock); the rest
/// is `OperationQueue`'s, which is thread-safe.
final class DelegateQueue: OperationQueue, @unchecked Sendable {
    private let target: DispatchQueue
    /// Operations added but not yet run, producers waiting for room, and whether flow control is off
    /// (the delegate queue is calling something that may wait for FoundationNetworking's queue).
    /// Locked: FoundationNetworking's queue adds operations (and may wait); the delegate queue runs them and wakes it.
    private let backlog = Locked((pending: 0, waiting: 0, off: 0))
    private let room = DispatchSemaphore(value: 0)
    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    /// About 1 MiB of 16 KiB chunks.
    static var backlogLimit: Int { 64 }

    init(_ target: DispatchQueue) {
        self.target = target
        super.init()
        name = "switchboard.transport"
        maxConcurrentOperationCount = 1
        underlyingQueue = target  // for operations added as Operation objects, if any
        target.setSpecific(key: Self.key, value: ObjectIdentifier(self))
    }

    /// Runs `body` (a FoundationNetworking call that may wait for its own queue) with flow control off:
    /// producers waiting for room are woken, and none waits until `body` returns.
    func withoutFlowControl<T>(_ body: () -> T) -> T {
        let waiting = backlog.withLock { backlog -> Int in
            backlog.off += 1
            defer { backlog.waiting = 0 }
            return backlog.waiting
        }
        for _ in 0..<waiting { room.signal() }
        defer { backlog.withLock { $0.off -= 1 } }
        return body()
    }

    /// Whether the caller runs on this queue's target (the delegate's queue).
    var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(self) }

    /// Runs `body` with flow control off when called on the delegate's queue (where waiting for
    /// FoundationNetworking's queue could meet that queue waiting for room), as it is otherwise.
    func whereSafe<T>(_ body: () -> T) -> T {
        isCurrent ? withoutFlowControl(body) : body()
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        let onTarget = isCurrent
        let wait = backlog.withLock { backlog -> Bool in
            guard !onTarget, backlog.off == 0, backlog.pending >= Self.backlogLimit else { return false }
            backlog.waiting += 1
            return true
        }
        if wait, room.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            // Not woken: give up the place (a wake-up sent meanwhile is spent by the next wait).
            backlog.withLock { $0.waiting = max(0, $0.waiting - 1) }
        }
        backlog.withLock { $0.pending += 1 }
        target.async { [self] in
            block()
            let wake = backlog.withLock { backlog -> Bool in
                backlog.pending -= 1
                guard backlog.waiting > 0, backlog.pending < Self.backlogLimit else { return false }
                backlog.waiting -= 1
                return true
            }
            if wake { room.signal() }
        }
    }
}
