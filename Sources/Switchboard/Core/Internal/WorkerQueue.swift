import Dispatch

/// Where the library's rare hops off the calling thread go: a cancel's or an ended deadline's
/// delivery (the stop the transport reported, or the sweeper's end of one it didn't, a released
/// owner's cancel, a coalesced waiter's), a retry after its delay, a transfer that failed before it
/// started, a download's late claim, the cache's logger.
///
/// Each block gets a serial queue of its own, which libdispatch runs on its overcommit pool: a thread
/// is found or made for it (up to libdispatch's cap, 255 threads on Linux) even when every worker of
/// `DispatchQueue.global()` is busy or blocked. On Linux that pool starts with as many workers as
/// cores (two here) and adds one about every second while they block (and default-priority Swift
/// tasks share those workers); an app's hooks blocking there held other sends' cancels and deadlines
/// for as long (beside a compiler, a 0.3 s deadline ended after 39 s).
///
/// The per-response work (checks off the transport's queue, decoding a typed value, response hooks,
/// monitors) stays on `DispatchQueue.global()`: a queue per response there cost a typed
/// `response(for:)` a median of 12 / 8 / 7 µs of CPU at c=1 / 8 / 64 (the bench's `pipeline`
/// scenario, three alternating pairs). A queue here may cost a thread: a burst of N such hops (a retry
/// storm, N deadlines in one sweep) can make up to N threads, up to libdispatch's cap.
enum WorkerQueue {
    /// Runs `work` on a thread of the overcommit pool.
    static func async(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "switchboard.worker").async(execute: work)
    }

    /// Runs `work` on a thread of the overcommit pool at `deadline`.
    static func asyncAfter(deadline: DispatchTime, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "switchboard.worker").asyncAfter(deadline: deadline, execute: work)
    }
}
