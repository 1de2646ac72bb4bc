import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The global dispatcher: builds and sends requests, and fans every event out to the observers
/// registered for the request's type (the MyURLClass pattern, made one global, locked object).
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.baseURL = URL(string: "https://api.example.com") }
///
/// @MainActor final class ProfileScreen {
///     init() {
///         Dispatcher.shared.addObserver(self, for: GetUserInfo.self, calling: ProfileScreen.userInfoChanged)
///     }
///     func userInfoChanged(_ event: RequestEvent<GetUserInfo>) {
///         if case .succeeded(let response) = event.kind { print(response.json["user"]["name"]) }
///     }
/// }
///
/// Dispatcher.shared.send(GetUserInfo(id: "123"))                       // observers only
/// Dispatcher.shared.send(GetUserInfo(id: "123")) { result in … }       // and a closure
/// let response = try await Dispatcher.shared.response(for: GetUserInfo(id: "123"))
/// ```
///
/// Every send ends in exactly one terminal event (succeeded, failed or cancelled), delivered once to each
/// observer registered when it fired. Thread-safe: call anything from any thread.
public final class Dispatcher: Sendable {
    /// The shared dispatcher, configured through ``updateConfiguration(_:)``.
    public static let shared = Dispatcher()

    private struct State {
        /// The configuration, in a snapshot its sends share (replaced, never changed).
        var configuration: ConfigurationSnapshot
        /// Bumped by every configuration update (for ``updateConfiguration(_:)``'s compare-and-swap).
        var version: UInt64 = 0
        var transport: (any Transport)?
        /// The settings the transport was created with; `nil` when it was given to `init`.
        var transportSettings: TransportSettings?
        /// The configuration ``version`` the transport was last found to match (its settings are not
        /// made and compared again until the configuration changes).
        var transportMatchesVersion: UInt64?
        /// The in-memory cookie jar (``CookiePolicy/inMemory``), kept across new transports.
        var cookieJar: HTTPCookieStorage?
        var nextID: UInt64 = 1
    }

    @usableFromInline let registry: ObserverRegistry
    /// Locked: sends, `updateConfiguration` and the cookie jar from any thread.
    private let state: Locked<State>
    /// The sends that have not finished, by id (a lock of its own, shared with the sweeper).
    private let inFlight = Locked<[UInt64: any InFlightOperation]>([:])
    private let ownsTransport: Bool
    private let sweeper: DeadlineSweeper
    /// Identical transfers in flight, shared.
    let coalescer = Coalescer()

    /// Creates a dispatcher of your own.
    /// - Parameters:
    ///   - configuration: its settings.
    ///   - transport: how requests travel, whatever ``Configuration/transport`` says; `nil` (the
    ///     default) makes one with ``Configuration/transport`` at the first send, and a new one for
    ///     later sends when the factory or the transport settings change.
    public init(configuration: Configuration = Configuration(), transport: (any Transport)? = nil) {
        registry = ObserverRegistry()
        state = Locked(State(configuration: ConfigurationSnapshot(configuration), transport: transport))
        ownsTransport = transport == nil
        sweeper = DeadlineSweeper { [inFlight] now in
            let operations = inFlight.withLock { Array($0.values) }
            var found = DeadlineSweeper.Sweep(earliest: .max, owned: false)
            for operation in operations {
                if let owner = operation.owner {
                    switch owner.liveness() {
                    case .released:
                        // Off the sweeper's queue: a cancel may deliver at once, and delivering runs user
                        // code. The send's stop is still enforced below (a transport that never reports
                        // it is ended after the grace period, as for any cancel). Once: later sweeps
                        // while it stops would each make a queue for a cancel that does nothing.
                        if owner.claimCancel() { WorkerQueue.async { operation.cancel() } }
                    case .alive, .askedOnMain:
                        found.owned = true
                    }
                }
                operation.expire(now: now)
                found.earliest = min(found.earliest, operation.deadline)
            }
            return found
        }
    }

    /// The settings, as they are now. Change them with ``updateConfiguration(_:)``; each send uses the
    /// configuration as it was when it was sent.
    public var configuration: Configuration {
        settings.value
    }

    /// The configuration as the dispatcher holds it: what a send made now would use, without a copy.
    var settings: ConfigurationSnapshot {
        state.withLock { $0.configuration }
    }

    /// Changes the configuration atomically: concurrent updates never lose each other's changes.
    ///
    /// ```swift
    /// Dispatcher.shared.updateConfiguration { $0.urlFilters.append(URLArgumentsFilter(["version": "2.0"])) }
    /// ```
    /// Every setting applies to sends made afterwards. Transport settings (``Configuration/transport``,
    /// ``Configuration/maximumConnectionsPerHost``, ``Configuration/cookies``) apply through a new
    /// transport, made at the next send (sends in flight finish on the old one); with a transport given
    /// to ``init(configuration:transport:)``, they are yours to apply, and a change is reported to the
    /// configured logger (an `.error` record, whatever the log mode).
    /// - Parameter change: runs on the calling thread, outside every lock, on a copy of the current
    ///   configuration. If another update lands meanwhile, it runs again on the newer value, so keep it
    ///   free of side effects. It may read ``configuration``.
    ///   It must not call `updateConfiguration` itself (that could never settle; it stops the program
    ///   with a message).
    public func updateConfiguration(_ change: (inout Configuration) throws -> Void) rethrows {
        let marker = "switchboard.updating.\(ObjectIdentifier(self).hashValue)"
        let thread = Thread.current.threadDictionary
        precondition(thread[marker] == nil, "updateConfiguration was called from inside its own closure; make one update instead")
        thread[marker] = true
        defer { thread.removeObject(forKey: marker) }
        while true {
            let (current, version) = state.withLock { ($0.configuration, $0.version) }
            var updated = current.value
            try change(&updated)
            let snapshot = ConfigurationSnapshot(updated)
            let swapped = state.withLock { state -> (replaced: ConfigurationSnapshot, warn: Bool)? in
                guard state.version == version else { return nil }
                // The old value leaves the lock in the result, so no deinit of a user's object (a
                // logger, a filter) runs while it is held.
                let old = state.configuration
                state.configuration = snapshot
                state.version &+= 1
                let warn = !ownsTransport && state.transport != nil && TransportSettings(old.value) != TransportSettings(updated)
                return (old, warn)
            }
            guard let swapped else { continue }
            if swapped.warn {
                updated.logger.log(
                    LogRecord(
                        level: .error, requestID: 0, message: "transport settings changed, but this dispatcher's transport was given to it: apply them to the transport yourself"))
            }
            return
        }
    }

    /// Sends a request. Observers of `R` get its events; `completion`, if given, gets its result once.
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - completion: called once with the response or the error, on ``Configuration/callbackQueue``,
    ///     after the observers on that same queue.
    /// - Returns: a handle to cancel the send; its ``RequestHandle/id`` is the ``RequestEvent/sendID`` of
    ///   the send's events.
    @discardableResult
    public func send<R: Request>(
        _ request: R,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)? = nil
    ) -> RequestHandle {
        send(request, completionQueue: nil, completion: completion)
    }

    /// Sends a request and reports its progress: bytes sent (an upload) and received (a download).
    ///
    /// ```swift
    /// Dispatcher.shared.send(upload, progress: { bar.value = $0.fractionSent ?? 0 }) { result in … }
    /// ```
    /// - Parameters:
    ///   - request: the request.
    ///   - progress: called as bytes move, on ``Configuration/callbackQueue``, never after `completion`;
    ///     the counts only grow, and after a success the last call reports the whole body.
    ///   - completion: called once with the response or the error, on ``Configuration/callbackQueue``.
    /// - Returns: a handle to cancel the send.
    @discardableResult
    public func send<R: Request>(
        _ request: R,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        completion: @escaping @Sendable (Result<Response<R>, NetworkError>) -> Void
    ) -> RequestHandle {
        send(request, completionQueue: nil, progress: progress, completion: completion)
    }

    /// Sends with the completion (and progress) on `completionQueue` (`nil`: the configuration's callback queue).
    func send<R: Request>(
        _ request: R,
        completionQueue: CallbackQueue?,
        owner: AnyObject? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    ) -> RequestHandle {
        let (operation, transport) = makeOperation(request, completionQueue: completionQueue, owner: owner, progress: progress, completion: completion)
        launch(operation, on: transport)
        return RequestHandle(operation: operation)
    }

    /// A send's operation and the transport it goes on, not started yet (``launch(_:on:)`` starts it).
    func makeOperation<R: Request>(
        _ request: R,
        completionQueue: CallbackQueue?,
        owner: AnyObject? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    ) -> (RequestOperation<R>, any Transport) {
        let (id, configuration, current) = currentTransport()
        // A transport given by the app, or made before the setting, that doesn't apply the trust or the
        // proxy asked for carries nothing: the send fails, never goes another way.
        let transport = configuration.value.routeAndTrustAreDefault ? current : Self.checked(current, configuration.value)
        let operation = RequestOperation(
            id: id,
            request: request,
            configuration: configuration,
            registry: registry,
            completionQueue: completionQueue ?? configuration.value.callbackQueue,
            progress: progress,
            completion: completion,
            coalescer: coalescer,
            owner: owner,
            deadlines: sweeper,
            // The in-flight table, not the dispatcher: a send that ends after its dispatcher was
            // released must still leave it (the sweeper counts what is in it).
            onFinish: { [inFlight] id in inFlight.withLock { _ = $0.removeValue(forKey: id) } }
        )
        return (operation, transport)
    }

    /// `transport`, or one that fails every send, when it doesn't apply the configuration's trust and
    /// proxy settings.
    private static func checked(_ transport: any Transport, _ configuration: Configuration) -> any Transport {
        if transport.applies(serverTrust: configuration.serverTrust, proxy: configuration.proxy) { return transport }
        let name = "\(type(of: transport))"
        if !configuration.serverTrust.isSystemDefault {
            return RefusingTransport(
                error: .unsupportedTrustPolicy(
                    reason: "the transport (\(name)) doesn't apply this dispatcher's serverTrust (and proxy): it was given to the dispatcher, or made without them"))
        }
        return RefusingTransport(
            error: .proxyFailed(reason: "the transport (\(name)) doesn't apply this dispatcher's proxy setting: it was given to the dispatcher, or made without it"))
    }

    /// How many times the deadline sweeper's timer has fired: for the package's tests.
    var deadlineSweeps: Int { sweeper.sweepCount }

    /// Puts `operation` in flight (the sweeper watches its deadline) and starts it on `transport`.
    func launch<R: Request>(_ operation: RequestOperation<R>, on transport: any Transport) {
        inFlight.withLock { $0[operation.id] = operation }
        if operation.owner != nil { sweeper.watchOwner() }
        operation.start(on: transport)
    }

    /// The transport for a send now: the one given to `init`, or one from the configuration's factory,
    /// replaced when the factory or the transport settings no longer match the ones it was made with.
    /// The factory runs outside the lock (it is user code); of two sends that both find the transport
    /// out of date, the first to store its new one wins and the other's is dropped.
    private func currentTransport() -> (id: UInt64, configuration: ConfigurationSnapshot, transport: any Transport) {
        let found = state.withLock { state -> (id: UInt64, configuration: ConfigurationSnapshot, transport: (any Transport)?, jar: HTTPCookieStorage?) in
            let id = state.nextID
            state.nextID += 1
            // `transportMatchesVersion` is nil until a transport is made and again after one is replaced.
            if ownsTransport, state.transportMatchesVersion != state.version {
                if state.transport == nil || state.transportSettings != TransportSettings(state.configuration.value) {
                    if state.cookieJar == nil { state.cookieJar = URLSessionConfiguration.ephemeral.httpCookieStorage }
                    return (id, state.configuration, nil, state.cookieJar)
                }
                state.transportMatchesVersion = state.version
            }
            return (id, state.configuration, state.transport, nil)
        }
        if let transport = found.transport { return (found.id, found.configuration, transport) }
        let settings = TransportSettings(found.configuration.value)
        let made = found.configuration.value.transport.makeTransport(TransportContext(configuration: found.configuration.value, cookieJar: found.jar))
        let (chosen, dropped) = state.withLock { state -> (any Transport, (any Transport)?) in
            if let current = state.transport, state.transportSettings == settings { return (current, made) }
            let replaced = state.transport
            state.transport = made
            state.transportSettings = settings
            state.transportMatchesVersion = nil  // the next send compares its configuration's settings
            return (made, replaced)
        }
        _ = dropped  // released here, outside the lock (a transport's deinit may be user code)
        return (found.id, found.configuration, chosen)
    }

    /// The cookies a send's transport would add now, for the cache (asked outside the lock: a
    /// transport may be the app's code). Makes the transport when no send has yet.
    var cookiesForCache: TransportCookies { currentTransport().transport.addedCookies }

    /// The transport the latest sends used, `nil` before the first send: for the package's tests (it
    /// makes nothing and uses up no send ID).
    var transportInUse: (any Transport)? { state.withLock { $0.transport } }

    /// Releasing a dispatcher ends its event streams (their `for await` loops finish) and cancels the
    /// sends still in flight: each reports `cancelled` to its own closure (observers are gone by then).
    /// Keep a dispatcher for as long as its sends should run.
    deinit {
        registry.removeAll()
        // A send's transfer holds the transport, not the dispatcher, so without this it would run on.
        // The sweeper outlives the dispatcher while sends remain, so a transport that never reports the
        // cancel can't leave one without its terminal event.
        cancelAll()
    }

    /// Delivers `event` to the observers of `R` as a send would (for the benchmarks and the package's
    /// own tests).
    @inlinable
    package func post<R: Request>(_ event: RequestEvent<R>) {
        registry.post(event)
    }

    /// Cancels every send in flight; each reports `cancelled` once (after its `started`).
    public func cancelAll() {
        // They leave `inFlight` as they finish, so the sweeper still ends any whose transport never
        // reports the cancel.
        for operation in operations() { operation.cancel() }
    }

    /// The sends in flight now.
    func operations() -> [any InFlightOperation] {
        inFlight.withLock { Array($0.values) }
    }

    /// The number of sends that have not finished. A send leaves the count once its terminal event
    /// has gone to its ``CallbackQueue/immediate`` observers (others have it queued), and before its
    /// completion closure runs or its `await` returns.
    public var inFlightCount: Int { inFlight.withLock { $0.count } }
}

/// The settings a transport is made with: when they change, the dispatcher makes a new one.
struct TransportSettings: Equatable {
    var factory: UInt64
    var maximumConnectionsPerHost: Int
    var cookies: CookiePolicy
    var serverTrust: ServerTrust
    var proxy: ProxySetting

    init(_ configuration: Configuration) {
        factory = configuration.transport.identity
        maximumConnectionsPerHost = configuration.maximumConnectionsPerHost
        cookies = configuration.cookies
        serverTrust = configuration.serverTrust
        proxy = configuration.proxy
    }
}

/// A send in flight: cancel it, or ask whether it finished.
public final class RequestHandle: Sendable, Hashable {
    private let operation: any InFlightOperation

    init(operation: any InFlightOperation) {
        self.operation = operation
    }

    /// A number unique to this send within its dispatcher.
    public var id: UInt64 { operation.id }

    /// Whether the send has finished: its terminal event is decided and being (or has been) delivered.
    public var isFinished: Bool { operation.isFinished }

    /// Cancels the send. Observers and the completion get `cancelled` once (always after `started`),
    /// unless it already finished. Safe from any thread, any number of times. While interceptors adapt
    /// or decide a retry, while the response cache reads the disk, and between retries, the event is
    /// delivered from this thread, before `cancel()` returns; while the request is built, from the
    /// thread that sent it right after `started` (from a global queue once it is built, for a body
    /// built there: a multipart form with files or streams); during a transfer, from the
    /// transport's queue once it stopped (or from a global queue if the transport doesn't report within
    /// a second). A send that shares its transfer with identical ones (``Configuration/coalescesDuplicates``)
    /// leaves the others running and hears its `cancelled` from a global queue.
    public func cancel() { operation.cancel() }

    /// Whether both handles stand for the same send.
    public static func == (lhs: RequestHandle, rhs: RequestHandle) -> Bool { lhs.operation === rhs.operation }

    /// Hashes the send's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(operation)) }
}

/// A configuration as a dispatcher holds it: immutable, replaced by each update, shared by the sends
/// made with it (each keeps one reference, not a copy of every setting). Pass the snapshot, not its
/// `value`, and read settings through it (`settings.value.timeout`): a copy of the struct retains and
/// releases every reference it holds, a few microseconds a send when it was made per stage.
final class ConfigurationSnapshot: Sendable {
    let value: Configuration
    /// ``Configuration/allMonitors``, made once (the logging monitor, when on, is not made per send).
    let allMonitors: [any EventMonitor]
    /// The decoder of typed responses, made once (a `JSONDecoder` may decode on several threads at once).
    let decoder: JSONDecoder

    init(_ value: Configuration) {
        self.value = value
        allMonitors = value.allMonitors
        decoder = value.jsonCoding.makeDecoder()
    }
}
