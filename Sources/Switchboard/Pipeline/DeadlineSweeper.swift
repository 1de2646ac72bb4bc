import Dispatch

/// Enforces the deadlines of a dispatcher's sends with one timer, set for the earliest moment it must
/// look: the earliest deadline (or a stop's grace period) of the sends in flight, and, while a send has
/// an owner, 200 ms from now (whether the owner was released can only be asked). A send whose deadline
/// comes earlier than the timer's moment moves it (``ensure(by:)``, from the send's state as it sets
/// it); otherwise nothing wakes while sends wait, and nothing at all once none are in flight. A
/// deadline is enforced within a few milliseconds of its time, whatever the transport does and however
/// busy the transport's queue is.
final class DeadlineSweeper: Sendable {
    private struct Schedule {
        var timer: (any DispatchSourceTimer)?
        /// When the timer fires next (uptime nanoseconds), `.max` for never.
        var fireAt = UInt64.max
        /// Moments asked for during a sweep (which reschedules with them).
        var requested = UInt64.max
        var sweeping = false
    }

    /// What a sweep found: the earliest deadline among the sends in flight, and whether any has an
    /// owner (asked again at the next owner poll).
    struct Sweep {
        var earliest: UInt64
        var owned: Bool
    }

    private let queue = DispatchQueue(label: "switchboard.deadlines")
    /// Locked: senders arm and disarm deadlines from any thread; the timer reads them on `queue`.
    private let schedule = Locked(Schedule())
    /// Expires what is overdue at the given uptime (nanoseconds) and says what remains.
    private let expire: @Sendable (UInt64) -> Sweep
    /// How often a send's owner is looked at while one is in flight.
    static let ownerPoll: UInt64 = 200_000_000
    /// How many times the timer has fired: for the package's tests (no wake-ups while sends wait).
    private let sweeps = AtomicCount()
    var sweepCount: Int { sweeps.value }

    init(expire: @escaping @Sendable (UInt64) -> Sweep) {
        self.expire = expire
    }

    deinit {
        schedule.withLock { $0.timer?.cancel() }
    }

    /// Makes the timer fire no later than `moment` (uptime nanoseconds). Safe under a send's lock: it
    /// takes only the sweeper's own, and calls no user code.
    func ensure(by moment: UInt64) {
        schedule.withLock { schedule in
            guard moment < schedule.fireAt || schedule.sweeping else { return }
            schedule.requested = min(schedule.requested, moment)
            if !schedule.sweeping { arm(&schedule, at: moment) }
        }
    }

    /// A send with an owner went in flight: the owner is looked at within ``ownerPoll``.
    func watchOwner() {
        ensure(by: DispatchTime.now().uptimeNanoseconds &+ Self.ownerPoll)
    }

    private func arm(_ schedule: inout Schedule, at moment: UInt64) {
        guard moment < schedule.fireAt else { return }
        if schedule.timer == nil {
            let source = DispatchSource.makeTimerSource(queue: queue)
            // A strong reference while armed: the sweeper outlives its dispatcher until the sends it
            // watches have ended (the source is cancelled when none remain, releasing this handler).
            source.setEventHandler { self.sweep() }
            source.resume()
            schedule.timer = source
        }
        schedule.fireAt = moment
        schedule.timer?.schedule(deadline: DispatchTime(uptimeNanoseconds: max(1, moment)), repeating: .never, leeway: .milliseconds(5))
    }

    private func sweep() {
        sweeps.add(1)
        schedule.withLock { schedule in
            schedule.sweeping = true
            schedule.requested = .max
            schedule.fireAt = .max
        }
        let now = DispatchTime.now().uptimeNanoseconds
        let found = expire(now)
        let finished = schedule.withLock { schedule -> (any DispatchSourceTimer)? in
            schedule.sweeping = false
            var next = min(found.earliest, schedule.requested)
            if found.owned { next = min(next, now &+ Self.ownerPoll) }
            if next != .max {
                // A deadline already past (set as the sweep ran) fires at once.
                arm(&schedule, at: max(next, now &+ 1))
                return nil
            }
            // Nothing to look at until a send sets a deadline (which arms the timer again).
            defer { schedule.timer = nil }
            return schedule.timer
        }
        finished?.cancel()
    }
}
