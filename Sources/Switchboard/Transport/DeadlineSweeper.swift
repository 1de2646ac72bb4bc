import Dispatch

/// Enforces transfer deadlines with one repeating timer per transport instead of one timer per request
/// (a timer per request wakes libdispatch's timer thread on every send). It ticks every 50 ms on the
/// transport's queue while transfers exist and stops when none are left, so an idle app gets no wakeups.
/// A deadline is therefore enforced within about 50 ms of its time.
final class DeadlineSweeper: Sendable {
    private let queue: DispatchQueue
    private let delegate: SessionDelegate
    private let timer = Locked<(any DispatchSourceTimer)?>(nil)
    static let tick: DispatchTimeInterval = .milliseconds(50)

    init(queue: DispatchQueue, delegate: SessionDelegate) {
        self.queue = queue
        self.delegate = delegate
    }

    /// Starts ticking unless it already does.
    func ensureRunning() {
        let source = timer.withLock { timer -> (any DispatchSourceTimer)? in
            guard timer == nil else { return nil }
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.schedule(deadline: .now() + Self.tick, repeating: Self.tick, leeway: .milliseconds(10))
            timer = source
            return source
        }
        guard let source else { return }
        source.setEventHandler { [weak self] in self?.sweep() }
        source.resume()
    }

    /// Stops ticking.
    func stop() {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    private func sweep() {
        let remaining = delegate.expireTransfers(now: DispatchTime.now().uptimeNanoseconds)
        guard remaining == 0 else { return }
        // Nothing left: stop, unless a transfer registered meanwhile (it then restarts the timer).
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
        if delegate.hasTransfers { ensureRunning() }
    }
}
