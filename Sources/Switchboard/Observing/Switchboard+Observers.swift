/// Observers: the registry of who hears about which request type.
extension Switchboard {
    /// Registers `observer` for every event of requests of type `R`, calling `method` on it: the Swift
    /// form of an Objective-C callback selector.
    ///
    /// ```swift
    /// Switchboard.shared.addObserver(self, for: GetUserInfo.self, calling: ProfileScreen.userInfoChanged)
    /// ```
    /// The observer is held weakly: when it is deallocated it receives nothing more and leaves the registry.
    /// - Parameters:
    ///   - observer: the object to call.
    ///   - type: the request type to observe.
    ///   - queue: where to call it; `nil` uses ``Configuration/callbackQueue`` as it is now (the main queue
    ///     by default). Use a serial queue so one send's events arrive in order.
    ///   - method: an unapplied method reference, `ProfileScreen.userInfoChanged`.
    /// - Returns: a token that removes this registration.
    @inlinable
    @discardableResult
    public func addObserver<O: AnyObject, R: Request>(
        _ observer: O,
        for type: R.Type,
        on queue: CallbackQueue? = nil,
        calling method: @escaping (O) -> (RequestEvent<R>) -> Void
    ) -> ObservationToken {
        // The method reference becomes a closure once, here, so delivery doesn't build a partial
        // application per call.
        let entry = WeakObserverEntry<R, O>(registry: registry, observer: observer) { observer, event in
            method(observer)(event)
        }
        return registry.add(entry, queue: queue)
    }

    /// Registers a main-actor `observer` (a `@MainActor` class, such as a view model) for every event of
    /// requests of type `R`. `method` is called on the main queue, inside the main actor's isolation.
    ///
    /// ```swift
    /// @MainActor final class ProfileModel {
    ///     init() { Switchboard.shared.addObserver(self, for: GetUserInfo.self, calling: ProfileModel.changed) }
    ///     func changed(_ event: RequestEvent<GetUserInfo>) { … }
    /// }
    /// ```
    /// - Returns: a token that removes this registration.
    @inlinable
    @discardableResult
    public func addObserver<O: AnyObject, R: Request>(
        _ observer: O,
        for type: R.Type,
        calling method: @escaping @Sendable (O) -> @MainActor (RequestEvent<R>) -> Void
    ) -> ObservationToken {
        // The unapplied reference of a main-actor method has exactly this type, so overload resolution
        // picks this form for main-actor observers and the other for everything else.
        let entry = MainActorObserverEntry<R, O>(registry: registry, observer: observer) { observer, event in
            method(observer)(event)
        }
        return registry.add(entry, queue: .main)
    }

    /// Registers `observer` for every event of requests of type `R`, calling `handler` with the observer
    /// and the event. The observer is held weakly (and passed back, so the closure needn't capture it).
    ///
    /// ```swift
    /// Switchboard.shared.addObserver(self, for: GetUserInfo.self) { screen, event in screen.show(event) }
    /// ```
    /// - Parameters:
    ///   - observer: the object whose lifetime bounds the registration.
    ///   - type: the request type to observe.
    ///   - queue: where to call it; `nil` uses ``Configuration/callbackQueue`` as it is now.
    ///   - handler: called with the observer and each event.
    /// - Returns: a token that removes this registration.
    @inlinable
    @discardableResult
    public func addObserver<O: AnyObject, R: Request>(
        _ observer: O,
        for type: R.Type,
        on queue: CallbackQueue? = nil,
        handler: @escaping (O, RequestEvent<R>) -> Void
    ) -> ObservationToken {
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

    /// The number of live registrations for `R` (streams included).
    public func observerCount<R: Request>(for type: R.Type) -> Int {
        registry.count(for: R.self)
    }
}
