import Dispatch

/// Where the library runs work that leaves the calling thread: a cancel's or an ended deadline's
/// delivery, a retry after its delay, a large body's checks, response hooks, a logger.
///
/// Each block gets a serial queue of its own, and libdispatch runs serial queues on its overcommit
/// pool, which finds or makes a thread for every block. `DispatchQueue.global()` does not: on Linux it
/// has about as many workers as cores (two here), so an app's hook or observer that blocked two of
/// them held every other send's cancel and deadline until it returned. Under load the suite saw whole
/// seconds of that (a send's 0.3 s deadline ended after 39 s beside a compiler). A queue costs an
/// allocation, on paths that are not the common one (the e2e bench's requests never come here).
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
