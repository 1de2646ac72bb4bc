/// Streams of events: per request type, and the bus of all requests.
///
/// Buffering: by default (`.unbounded`) a stream keeps every event until its consumer takes it, so
/// nothing is lost however slow the consumer; a consumer that stops reading while sends go on holds
/// their events in memory. `.bufferingNewest(n)` keeps only the newest `n` not yet taken and drops
/// older ones; `.bufferingOldest(n)` drops newer ones. Events are fed to the stream on the thread that
/// produced them, never blocking it.
///
/// A stream ends (its `for await` loop finishes) when its consumer stops, or when the dispatcher is
/// released.
extension Dispatcher {
    /// A stream of every event of requests of type `R`, from now until its consumer stops (the
    /// registration then leaves the registry) or the dispatcher is released.
    ///
    /// ```swift
    /// for await event in Dispatcher.shared.events(for: GetUserInfo.self) { … }
    /// ```
    /// - Parameters:
    ///   - type: the request type.
    ///   - bufferingPolicy: how many events wait for the consumer (see above). Default: `.unbounded`.
    ///   - replayingLast: `true` to start with the last event of each send of `R` already running
    ///     (its `started`, `cached` or latest `progress`), so a late subscriber knows what is in flight.
    ///     Then come the live events, with no gap and no duplicate. Default: `false`.
    public func events<R: Request>(
        for type: R.Type,
        bufferingPolicy: AsyncStream<RequestEvent<R>>.Continuation.BufferingPolicy = .unbounded,
        replayingLast: Bool = false
    ) -> AsyncStream<RequestEvent<R>> {
        let (stream, continuation) = AsyncStream.makeStream(of: RequestEvent<R>.self, bufferingPolicy: bufferingPolicy)
        let replay = replayingLast ? ReplayBuffer<RequestEvent<R>> { continuation.yield($0) } : nil
        let token = registry.add(StreamObserverEntry(registry: registry, continuation: continuation, replay: replay), queue: .immediate)
        continuation.onTermination = { _ in token.cancel() }
        if let replay {
            let key = ObjectIdentifier(R.self)
            let last = operations().filter { $0.requestTypeKey == key }.compactMap { $0.lastEvent(as: R.self) }
            replay.finish(replaying: last.sorted { $0.sendID < $1.sendID }.map { ($0.sendID, $0) })
        }
        return stream
    }

    /// A stream of every event of every request: the bus of all requests (for logging, analytics, a
    /// debug screen). Ends when its consumer stops or the dispatcher is released.
    ///
    /// ```swift
    /// Task {
    ///     for await event in Dispatcher.shared.allEvents() { print(event) }   // "GetUserInfo #3 succeeded 200"
    /// }
    /// ```
    /// - Parameters:
    ///   - bufferingPolicy: how many events wait for the consumer (see above). Default: `.unbounded`.
    ///   - replayingLast: `true` to start with the last event of each running send. Default: `false`.
    public func allEvents(
        bufferingPolicy: AsyncStream<AnyRequestEvent>.Continuation.BufferingPolicy = .unbounded,
        replayingLast: Bool = false
    ) -> AsyncStream<AnyRequestEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AnyRequestEvent.self, bufferingPolicy: bufferingPolicy)
        let replay = replayingLast ? ReplayBuffer<AnyRequestEvent> { continuation.yield($0) } : nil
        let entry = BusObserverEntry(
            registry: registry,
            handler: { event in
                if let replay { replay.offer(event, sendID: event.sendID) } else { continuation.yield(event) }
            },
            onRemove: { continuation.finish() }
        )
        let token = registry.add(entry, queue: .immediate)
        continuation.onTermination = { _ in token.cancel() }
        if let replay {
            let last = operations().compactMap(\.lastAnyEvent)
            replay.finish(replaying: last.sorted { $0.sendID < $1.sendID }.map { ($0.sendID, $0) })
        }
        return stream
    }

    /// Registers `handler` for every event of every request, on `queue`: the bus of all requests as a
    /// callback.
    ///
    /// ```swift
    /// let token = Dispatcher.shared.addObserverForAllRequests(on: .queue(logQueue)) { event in log(event) }
    /// ```
    /// - Parameters:
    ///   - queue: where `handler` runs; a serial queue keeps each send's events in order.
    ///   - handler: called with each event.
    /// - Returns: a token that removes the registration (the only way to remove it: no observer
    ///   object bounds it).
    @discardableResult
    public func addObserverForAllRequests(on queue: CallbackQueue, handler: @escaping @Sendable (AnyRequestEvent) -> Void) -> ObservationToken {
        registry.add(BusObserverEntry(registry: registry, handler: handler), queue: queue)
    }
}
