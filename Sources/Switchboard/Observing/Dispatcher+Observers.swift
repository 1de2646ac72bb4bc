/// Observers: the registry of who hears about which request type.
///
/// The forms are chosen so that Swift 6's data-race checking sees where each callback runs:
/// - A method reference (`calling: ProfileScreen.userInfoChanged`, the Swift form of a callback
///   selector) is always called on the main actor. From main-actor code any observer may register this
///   way; from elsewhere, a main-actor class or a `Sendable` one.
/// - A `Sendable` observer (or an actor, through its `nonisolated` methods) may choose another queue
///   with the closure form, `addObserver(_:for:on:handler:)`, whose handler must be `@Sendable`.
/// Registering a non-`Sendable` observer for another queue, or a main-actor closure for a background
/// queue, does not compile.
extension Dispatcher {
    /// Registers `observer` for every event of requests of type `R`, calling `method` on it on the main
    /// actor: the Swift form of an Objective-C callback selector.
    ///
    /// ```swift
    /// @MainActor final class ProfileScreen {
    ///     init() { Dispatcher.shared.addObserver(self, for: GetUserInfo.self, calling: ProfileScreen.userInfoChanged) }
    ///     func userInfoChanged(_ event: RequestEvent<GetUserInfo>) { … }
    /// }
    /// ```
    /// Called from main-actor code, so any class may register this way (it stays on the main actor).
    /// The observer is held weakly: when it is deallocated it receives nothing more and leaves the
    /// registry.
    /// - Parameters:
    ///   - observer: the object to call.
    ///   - type: the request type to observe.
    ///   - method: an unapplied method reference, `ProfileScreen.userInfoChanged`; called on the main queue,
    ///     inside the main actor's isolation.
    /// - Returns: a token that removes this registration.
    @MainActor
    @inlinable
    @discardableResult
    public func addObserver<O: AnyObject, R: Request>(
        _ observer: O,
        for type: R.Type,
        calling method: @escaping (O) -> (RequestEvent<R>) -> Void
    ) -> ObservationToken {
        // The method reference becomes a closure once, here, so delivery doesn't build a partial
        // application per call.
        addMainActorObserver(observer) { observer, event in method(observer)(event) }
    }

    /// Registers a main-actor or `Sendable` `observer` for every event of requests of type `R`, from any
    /// thread. `method` is called on the main queue, inside the main actor's isolation.
    ///
    /// ```swift
    /// @MainActor final class ProfileModel {
    ///     func start() { Dispatcher.shared.addObserver(self, for: GetUserInfo.self, calling: ProfileModel.changed) }
    ///     func changed(_ event: RequestEvent<GetUserInfo>) { … }
    /// }
    /// ```
    /// - Parameters:
    ///   - observer: the object to call, held weakly.
    ///   - type: the request type to observe.
    ///   - method: an unapplied method reference; called on the main queue, on the main actor.
    /// - Returns: a token that removes this registration.
    @inlinable
    @discardableResult
    public func addObserver<O: AnyObject & Sendable, R: Request>(
        _ observer: O,
        for type: R.Type,
        calling method: @escaping @Sendable (O) -> @MainActor (RequestEvent<R>) -> Void
    ) -> ObservationToken {
        addMainActorObserver(observer) { observer, event in method(observer)(event) }
    }

    /// Registers `observer` for every event of requests of type `R`, calling `handler` on the main actor
    /// with the observer and the event. The observer is held weakly (and passed back, so the closure
    /// needn't capture it).
    ///
    /// ```swift
    /// Dispatcher.shared.addObserver(self, for: GetUserInfo.self) { screen, event in screen.show(event) }
    /// ```
    /// - Parameters:
    ///   - observer: the object whose lifetime bounds the registration.
    ///   - type: the request type to observe.
    ///   - handler: called on the main queue, on the main actor, with the observer and each event.
    /// - Returns: a token that removes this registration.
    @MainActor
    @inlinable
    @discardableResult
    public func addObserver<O: AnyObject, R: Request>(
        _ observer: O,
        for type: R.Type,
        handler: @escaping @MainActor (O, RequestEvent<R>) -> Void
    ) -> ObservationToken {
        addMainActorObserver(observer, callback: handler)
    }

    /// Registers `callback` for delivery on the main actor, holding `observer` weakly.
    @inlinable
    func addMainActorObserver<O: AnyObject, R: Request>(
        _ observer: O,
        callback: @escaping @MainActor (O, RequestEvent<R>) -> Void
    ) -> ObservationToken {
        registry.add(MainActorObserverEntry<R, O>(registry: registry, observer: observer, callback: callback), queue: .main)
    }

    /// Registers a `Sendable` `observer` (a thread-safe class, or an actor through its `nonisolated`
    /// members) for every event of requests of type `R`, calling `handler` on the queue it chooses.
    ///
    /// ```swift
    /// let metrics = Metrics()     // final class Metrics: Sendable
    /// Dispatcher.shared.addObserver(metrics, for: GetUserInfo.self, on: .queue(metricsQueue)) { metrics, event in
    ///     metrics.record(event)
    /// }
    /// ```
    /// - Parameters:
    ///   - observer: the object whose lifetime bounds the registration, held weakly and passed back.
    ///   - type: the request type to observe.
    ///   - queue: where `handler` runs. Use a serial queue so one send's events arrive in order;
    ///     `.immediate` runs it on the thread that produced the event (see ``CallbackQueue/immediate``).
    ///   - handler: called on `queue` with the observer and each event.
    /// - Returns: a token that removes this registration.
    @inlinable
    @discardableResult
    public func addObserver<O: AnyObject & Sendable, R: Request>(
        _ observer: O,
        for type: R.Type,
        on queue: CallbackQueue,
        handler: @escaping @Sendable (O, RequestEvent<R>) -> Void
    ) -> ObservationToken {
        // On the main queue, the observer may be a main-actor class (one is `Sendable`): its entry then
        // never loads the reference off the main queue, so that it dies on the main actor.
        if queue.isMain {
            return registry.add(MainActorObserverEntry<R, O>(registry: registry, observer: observer, callback: handler), queue: .main)
        }
        let entry = WeakObserverEntry<R, O>(registry: registry, observer: observer, callback: handler)
        return registry.add(entry, queue: queue)
    }

    /// Removes every registration of `observer` for requests of type `R`. Events already queued for it
    /// are dropped.
    public func removeObserver<R: Request>(_ observer: AnyObject, for type: R.Type) {
        registry.remove(owner: ObjectIdentifier(observer), typeKey: ObjectIdentifier(R.self))
    }

    /// Removes every registration of `observer`, for all request types.
    public func removeObserver(_ observer: AnyObject) {
        registry.remove(owner: ObjectIdentifier(observer), typeKey: nil)
    }

    /// The number of live registrations for `R` (streams included). A main-actor observer that was
    /// deallocated counts, off the main queue, until a delivery on the main actor finds it gone: the
    /// registry never loads its reference elsewhere (see <doc:ObservingRequests>).
    public func observerCount<R: Request>(for type: R.Type) -> Int {
        registry.count(for: R.self)
    }
}
