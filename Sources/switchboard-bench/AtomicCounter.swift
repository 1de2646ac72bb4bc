import CSwitchboardAtomics

/// A counter shared by the workers of a run, without a lock (the package's C11 atomics, so the bench
/// builds on the package's deployment floor, below `Synchronization`'s).
///
/// `@unchecked Sendable`: the pointer is written only through the atomic builtins.
struct AtomicCounter: ~Copyable, @unchecked Sendable {
    private let storage: UnsafeMutablePointer<sb_atomic_counter>

    init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: sb_atomic_counter(value: 0))
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Adds one; returns the value before.
    @discardableResult
    func increment() -> Int { sb_atomic_counter_add(storage, 1) }

    var value: Int { sb_atomic_counter_load(storage) }
}
