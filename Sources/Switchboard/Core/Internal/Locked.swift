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
/// A pthread mutex (or `os_unfair_lock` on Apple platforms: written for, not built or tested in this
/// project's CI) rather than `Synchronization.Mutex`, because the thread sanitizer on Linux cannot see
/// `Mutex`'s locking and would report false races (and `Mutex` would raise the deployment floor). The state and the mutex share one allocation (``LockStorage``):
/// every send makes several locks, and a second `malloc` for each mutex showed in profiles.
///
/// A copy of a `Locked` is the same lock and the same state (it holds a reference).
///
/// `@unchecked Sendable`: the state is only read or written inside `withLock`, which holds the mutex for
/// the whole access, so no two threads ever touch it at once.
package struct Locked<State>: @unchecked Sendable {
    private let storage: LockStorage<State>

    package init(_ initial: State) {
        storage = LockStorage.make(initial)
    }

    /// Runs `body` with exclusive access to the state. Never call out to user code from `body`.
    @inline(__always)
    package func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try storage.withLock(body)
    }
}

#if canImport(Darwin)
typealias PlatformMutex = os_unfair_lock
#else
typealias PlatformMutex = pthread_mutex_t
#endif

/// One allocation holding a lock's state (the header) and its mutex (the one tail element, whose
/// address stays put for the object's life, as a pthread mutex needs).
final class LockStorage<State>: ManagedBuffer<State, PlatformMutex> {
    static func make(_ initial: State) -> LockStorage<State> {
        let buffer = create(minimumCapacity: 1) { _ in initial }
        buffer.withUnsafeMutablePointerToElements { mutex in
            #if canImport(Darwin)
            mutex.initialize(to: os_unfair_lock())
            #else
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
        // `create` makes an instance of the class it is called on.
        return unsafeDowncast(buffer, to: LockStorage<State>.self)
    }

    deinit {
        withUnsafeMutablePointerToElements { mutex in
            #if !canImport(Darwin)
            pthread_mutex_destroy(mutex)
            #endif
            _ = mutex.deinitialize(count: 1)
        }
    }

    @inline(__always)
    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try withUnsafeMutablePointers { state, mutex in
            #if canImport(Darwin)
            os_unfair_lock_lock(mutex)
            defer { os_unfair_lock_unlock(mutex) }
            #else
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            #endif
            return try body(&state.pointee)
        }
    }
}
