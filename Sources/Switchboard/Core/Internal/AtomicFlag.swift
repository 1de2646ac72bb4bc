#if !canImport(Darwin) && canImport(Synchronization) && !SWITCHBOARD_C_ATOMICS
import Synchronization

/// A flag set once, read without a lock. Off Apple platforms (Linux) it is `Synchronization.Atomic`,
/// stored inline in its owner: the module has no deployment floor there, and it saves the heap word
/// (a `malloc` and a `free` per observer registration and per transfer).
///
/// On Apple platforms, where `Atomic` would raise the deployment floor to iOS 18 / macOS 15, it is the
/// C11 atomics of `CSwitchboardAtomics` in a heap word of its own (that branch is only type-checked here, by `.ci/run` with `SWITCHBOARD_C_ATOMICS`).
package struct AtomicFlag: ~Copyable, Sendable {
    private let storage = Atomic<Bool>(false)

    package init() {}

    /// Whether the flag is set (acquire ordering).
    @inline(__always) package var isSet: Bool { storage.load(ordering: .acquiring) }

    /// Sets the flag (release ordering).
    @inline(__always) package func set() { storage.store(true, ordering: .releasing) }

    /// Sets the flag unless it was set; returns whether this call set it.
    @inline(__always) package func testAndSet() -> Bool {
        storage.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}
#else
import CSwitchboardAtomics

/// A flag set once, read without a lock: the C11 atomics of `CSwitchboardAtomics` (`Synchronization.Atomic`
/// would raise the deployment floor to iOS 18 / macOS 15, and a lock per load costs the delivery path).
/// Apple platforms (and `SWITCHBOARD_C_ATOMICS`, which `.ci/run` type-checks) only: on Linux the flag is `Atomic` (above).
///
/// Noncopyable, so its heap word has exactly one owner, freed with it.
///
/// `@unchecked Sendable`: the pointer is written only through the atomic builtins.
package struct AtomicFlag: ~Copyable, @unchecked Sendable {
    private let storage: UnsafeMutablePointer<sb_atomic_flag>

    package init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: sb_atomic_flag(value: 0))
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Whether the flag is set (acquire ordering).
    @inline(__always) package var isSet: Bool { sb_atomic_flag_load(storage) }

    /// Sets the flag (release ordering).
    @inline(__always) package func set() { sb_atomic_flag_set(storage) }

    /// Sets the flag unless it was set; returns whether this call set it.
    @inline(__always) package func testAndSet() -> Bool { sb_atomic_flag_test_and_set(storage) }
}
#endif
