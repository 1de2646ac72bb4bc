import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The global dispatcher: builds and sends requests, and fans every event out to the observers
/// registered for the request's type (seed 002's MyURLClass, made one global, locked object).
///
/// ```swift
/// Switchboard.shared.configuration.baseURL = URL(string: "https://api.example.com")
///
/// final class ProfileScreen {
///     init() {
///         Switchboard.shared.addObserver(self, for: GetUserInfo.self, calling: ProfileScreen.userInfoChanged)
///     }
///     func userInfoChanged(_ event: RequestEvent<GetUserInfo>) {
///         if case .succeeded(let response) = event { print(response.json["user"]["name"]) }
///     }
/// }
///
/// Switchboard.shared.send(GetUserInfo(id: "123"))                       // observers only
/// Switchboard.shared.send(GetUserInfo(id: "123")) { result in … }       // and a closure
/// let response = try await Switchboard.shared.response(for: GetUserInfo(id: "123"))
/// ```
///
/// Every send ends in exactly one terminal event (succeeded, failed or cancelled), delivered once to each
/// observer registered when it fired. Thread-safe: call anything from any thread.
public final class Switchboard: Sendable {
    /// The shared dispatcher, configured through ``configuration``.
    public static let shared = Switchboard()

    private struct State {
        var configuration: Configuration
        var transport: (any Transport)?
        var inFlight: [UInt64: any InFlightOperation] = [:]
        var nextID: UInt64 = 1
    }

    @usableFromInline let registry: ObserverRegistry
    private let state: Locked<State>

    /// Creates a dispatcher of your own.
    /// - Parameters:
    ///   - configuration: its settings.
    ///   - transport: how requests travel; `nil` creates a ``URLSessionTransport`` from `configuration`
    ///     at the first send.
    public init(configuration: Configuration = Configuration(), transport: (any Transport)? = nil) {
        registry = ObserverRegistry(defaultQueue: configuration.callbackQueue)
        state = Locked(State(configuration: configuration, transport: transport))
    }

    /// The settings. Changes apply to requests sent afterwards; transport settings apply only before the
    /// first send (when the URLSession is created).
    ///
    /// `configuration.x = y` reads, changes and writes back the whole value; when several threads may
    /// change it at once, use ``updateConfiguration(_:)``, which does the three under one lock.
    public var configuration: Configuration {
        get { state.withLock { $0.configuration } }
        set { updateConfiguration { $0 = newValue } }
    }

    /// Changes the configuration atomically.
    ///
    /// ```swift
    /// Switchboard.shared.updateConfiguration { $0.urlFilters.append(URLArgumentsFilter(["version": "2.0"])) }
    /// ```
    /// - Parameter change: runs under the dispatcher's lock; keep it to assignments (don't send from it).
    public func updateConfiguration(_ change: (inout Configuration) -> Void) {
        state.withLock { state in
            change(&state.configuration)
            // Under the same lock, so the registry's default queue never lags behind a concurrent change.
            registry.setDefaultQueue(state.configuration.callbackQueue)
        }
    }

    /// Sends a request. Observers of `R` get its events; `completion`, if given, gets its result once.
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - completion: called once with the response or the error, on ``Configuration/callbackQueue``,
    ///     after the observers on that same queue.
    /// - Returns: a handle to cancel the send.
    @discardableResult
    public func send<R: Request>(
        _ request: R,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)? = nil
    ) -> RequestHandle {
        send(request, completionQueue: nil, completion: completion)
    }

    /// Sends with the completion on `completionQueue` (`nil`: the configuration's callback queue).
    func send<R: Request>(
        _ request: R,
        completionQueue: CallbackQueue?,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    ) -> RequestHandle {
        let (id, configuration, transport) = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            let transport = state.transport ?? URLSessionTransport(configuration: state.configuration)
            state.transport = transport
            return (id, state.configuration, transport)
        }
        let operation = RequestOperation(
            id: id,
            request: request,
            configuration: configuration,
            registry: registry,
            completionQueue: completionQueue ?? configuration.callbackQueue,
            completion: completion,
            onFinish: { [weak self] id in self?.operationFinished(id) }
        )
        state.withLock { $0.inFlight[id] = operation }
        operation.start(on: transport)
        return RequestHandle(operation: operation)
    }

    /// Releasing a dispatcher ends its event streams (their `for await` loops finish) and cancels the
    /// sends still in flight: each reports `cancelled` to its own closure (observers are gone by then).
    /// Keep a dispatcher for as long as its sends should run.
    deinit {
        registry.removeAll()
        // A send's transfer holds the transport, not the dispatcher, so without this it would run on.
        cancelAll()
    }

    private func operationFinished(_ id: UInt64) {
        state.withLock { _ = $0.inFlight.removeValue(forKey: id) }
    }

    /// Delivers `event` to the observers of `R` as a send would (for the benchmarks and the package's
    /// own tests).
    @inlinable
    package func post<R: Request>(_ event: RequestEvent<R>) {
        registry.post(event)
    }

    /// Cancels every send in flight; each reports `cancelled` once.
    public func cancelAll() {
        let operations = state.withLock { state in
            let all = Array(state.inFlight.values)
            state.inFlight.removeAll()
            return all
        }
        for operation in operations { operation.cancel() }
    }

    /// The number of sends that have not finished.
    public var inFlightCount: Int { state.withLock { $0.inFlight.count } }
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

    /// Cancels the send. Observers and the completion get `cancelled` once, unless it already finished.
    /// Safe from any thread, any number of times. Before the transfer starts (or between retries) the
    /// event is delivered from this thread; during a transfer, from the transport's queue once it stopped.
    public func cancel() { operation.cancel() }

    /// Whether both handles stand for the same send.
    public static func == (lhs: RequestHandle, rhs: RequestHandle) -> Bool { lhs.operation === rhs.operation }

    /// Hashes the send's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(operation)) }
}
