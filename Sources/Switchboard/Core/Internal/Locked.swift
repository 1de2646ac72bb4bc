#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The project's one lock wrapper: all mutable state of an object lives in one value inside it and is
/// reached only through `withLock { }`.
///
/// A pthread mutex (or `os_unfair_lock` on Apple platforms) rather than `Synchronization.Mutex`, because
/// the thread sanitizer on Linux cannot see `Mutex`'s locking and would report false races.
///
/// `@unchecked Sendable`: `state` is only read or written inside `withLock`, which holds the mutex for
/// the whole access, so no two threads ever touch it at once.
package final class Locked<State>: @unchecked Sendable {
    // The mutex already makes access exclusive; Swift's dynamic exclusivity check would only add cost.
    @exclusivity(unchecked) private var state: State
    #if canImport(Darwin)
    private let mutex: UnsafeMutablePointer<os_unfair_lock>
    #else
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #endif

    package init(_ initial: State) {
        state = initial
        #if canImport(Darwin)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: os_unfair_lock())
        #else
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        #if canImport(Glibc)
        // Adaptive: spins briefly before sleeping in the kernel, which suits critical sections this short.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #else
        pthread_mutex_init(mutex, nil)
        #endif
        #endif
    }

    deinit {
        #if !canImport(Darwin)
        pthread_mutex_destroy(mutex)
        #endif
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state. Never call out to user code from `body`.
    @inline(__always)
    package func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        #if canImport(Darwin)
        os_unfair_lock_lock(mutex)
        defer { os_unfair_lock_unlock(mutex) }
        #else
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        #endif
        return try body(&state)
    }
}
