import Dispatch

/// Enforces the deadlines of a dispatcher's sends with one repeating timer instead of one timer per
/// request (a timer per request wakes libdispatch's timer thread on every send). It ticks every 50 ms on
/// its own queue while sends are in flight and stops when none are left, so an idle app gets no
/// wakeups. A deadline is therefore enforced within about 50 ms of its time, whatever the transport
/// does and however busy the transport's queue is.
final class DeadlineSweeper: Sendable {
    private let queue = DispatchQueue(label: "switchboard.deadlines")
    private let timer = Locked<(any DispatchSourceTimer)?>(nil)
    /// Expires what is overdue at the given uptime (nanoseconds); returns how many sends remain.
    private let expire: @Sendable (UInt64) -> Int
    static let tick: DispatchTimeInterval = .milliseconds(50)

    init(expire: @escaping @Sendable (UInt64) -> Int) {
        self.expire = expire
    }

    deinit { stop() }

    /// Starts ticking unless it already does. Call it after registering a send.
    func ensureRunning() {
        let source = timer.withLock { timer -> (any DispatchSourceTimer)? in
            guard timer == nil else { return nil }
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.schedule(deadline: .now() + Self.tick, repeating: Self.tick, leeway: .milliseconds(10))
            timer = source
            return source
        }
        guard let source else { return }
        // A strong reference while ticking: the sweeper outlives its dispatcher until the sends it
        // watches have ended (`stop` cancels the source, which releases this handler).
        source.setEventHandler { self.sweep() }
        source.resume()
    }

    /// Stops ticking.
    func stop() {
        let source = timer.withLock { timer in
            defer { timer = nil }
            return timer
        }
        source?.cancel()
    }

    private func sweep() {
        guard expire(DispatchTime.now().uptimeNanoseconds) == 0 else { return }
        // Nothing left: stop, unless a send registered meanwhile. A send registered after this check
        // finds the timer gone and starts a new one; one registered before it is counted below.
        stop()
        if expire(DispatchTime.now().uptimeNanoseconds) > 0 { ensureRunning() }
    }
}
