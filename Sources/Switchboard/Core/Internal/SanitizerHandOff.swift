import CSwitchboardAtomics

/// Marks a hand-off between threads that the thread sanitizer cannot see, so that it doesn't report
/// the hand-off's data as raced: a continuation resumed before its task suspended (the Swift
/// runtime then lets the task go on without an annotated step, and TSan reported the response's
/// fields, written on the transport's queue, as raced with the awaiting task's read of them).
/// Without the sanitizer both calls do nothing (an empty C function).
enum SanitizerHandOff {
    /// Call before resuming: what this thread did so far happens before ``acquire(_:)`` of `object`.
    @inline(__always) static func release(_ object: AnyObject) {
        sb_tsan_release(UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()))
    }

    /// Call after the await returns.
    @inline(__always) static func acquire(_ object: AnyObject) {
        sb_tsan_acquire(UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()))
    }
}
