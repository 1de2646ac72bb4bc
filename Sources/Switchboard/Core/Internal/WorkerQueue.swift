import Dispatch

/// Where the library's rare hops off the calling thread go: a cancel's or an ended deadline's
/// delivery, a retry after its delay, a transfer that failed before it started, a download's late
/// claim, the cache's logger.
///
/// Each block gets a serial queue of its own, which libdispatch runs on its overcommit pool: a thread
/// is found or made for it (up to libdispatch's cap, 255 threads on Linux) even when every worker of
/// `DispatchQueue.global()` is busy or blocked. On Linux that pool starts with as many workers as
/// cores (two here) and adds one about every second while they block, and Swift's concurrency tasks
/// run on it too; an app's hooks blocking there held other sends' cancels and deadlines for as long
/// (beside a compiler, a 0.3 s deadline ended after 39 s).
///
/// The per-response work (checks off the transport's queue, decoding a typed value, response hooks,
/// monitors) stays on `DispatchQueue.global()`: a queue and a thread wake per response there cost a
/// typed `response(for:)` 5 to 18 µs of CPU (the bench's `pipeline` scenario).
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
