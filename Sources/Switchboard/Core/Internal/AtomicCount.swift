#if !canImport(Darwin) && canImport(Synchronization) && !SWITCHBOARD_C_ATOMICS
import Synchronization

/// A count read without a lock on a hot path (whether anyone listens on the bus of all requests):
/// `Synchronization.Atomic` off Apple platforms, the C11 atomics of `CSwitchboardAtomics` on them, like
/// ``AtomicFlag``.
package struct AtomicCount: ~Copyable, Sendable {
    private let storage = Atomic<Int>(0)

    package init() {}

    /// Adds `delta` (which may be negative).
    @inline(__always) package func add(_ delta: Int) { storage.wrappingAdd(delta, ordering: .relaxed) }

    /// The count now (relaxed ordering: a change made at the same moment may not be seen yet).
    @inline(__always) package var value: Int { storage.load(ordering: .relaxed) }
}
#else
import CSwitchboardAtomics

/// A count read without a lock on a hot path (whether anyone listens on the bus of all requests): the
/// C11 atomics of `CSwitchboardAtomics`, like ``AtomicFlag``. Apple platforms only (on Linux `.ci/run`
/// type-checks it with `SWITCHBOARD_C_ATOMICS`).
///
/// `@unchecked Sendable`: the pointer is written only through the atomic builtins.
package struct AtomicCount: ~Copyable, @unchecked Sendable {
    private let storage: UnsafeMutablePointer<sb_atomic_counter>

    package init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: sb_atomic_counter(value: 0))
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Adds `delta` (which may be negative).
    @inline(__always) package func add(_ delta: Int) { _ = sb_atomic_counter_add(storage, delta) }

    /// The count now (relaxed ordering: a change made at the same moment may not be seen yet).
    @inline(__always) package var value: Int { sb_atomic_counter_load(storage) }
}
#endif
