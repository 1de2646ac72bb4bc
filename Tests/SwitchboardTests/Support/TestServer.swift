import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import SwitchboardTesting

/// Starts a standard loopback server on an ephemeral port, runs `body`, stops the server.
///
/// `stop()` waits for the server's threads, so it runs off Swift's cooperative pool (two threads on a
/// two-core machine), where blocking would stall every other test.
func withServer<T>(_ body: (LoopbackServer) async throws -> T) async throws -> T {
    let server = try LoopbackServer.standard()
    do {
        let result = try await body(server)
        await stopOffPool(server)
        return result
    } catch {
        await stopOffPool(server)
        throw error
    }
}

/// Runs blocking work (a wait, a child process, a server's stop) on a thread of its own.
///
/// Never on Dispatch's global queues: on Linux they have about as many threads as cores, so a test
/// that holds one for seconds holds up every other test's work there (under the thread sanitizer,
/// 30–40 s stalls of the whole suite, until a held wait timed out), the library's hooks and decoding
/// included. The library keeps its cancels and deadlines off them for that reason (``WorkerQueue``).
func onOwnThread(_ work: @escaping @Sendable () -> Void) {
    Thread.detachNewThread(work)
}

/// Stops `server` on a thread of its own and waits for it without blocking a cooperative thread.
func stopOffPool(_ server: LoopbackServer) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        onOwnThread {
            server.stop()
            continuation.resume()
        }
    }
}

extension LoopbackServer {
    /// Stops the server on a thread of its own and returns at once: for a test's `defer`, which can't
    /// await, on a task's thread or the main actor, which must not block (`stop()` waits for the
    /// server's threads to end).
    func stopInBackground() {
        onOwnThread { self.stop() }
    }
}

/// Runs slow synchronous work (checksums of hundreds of MiB, big files) on a thread of its own: on
/// Swift's cooperative pool (two threads here) it would hold up every other test's `await`s meanwhile,
/// and on a global queue every other test's work there (see `onOwnThread`).
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        onOwnThread { continuation.resume(with: Result { try work() }) }
    }
}

/// A dispatcher of its own for one test, pointed at `server`, calling back immediately (on the
/// transport's queue) unless told otherwise.
func makeClient(
    _ server: LoopbackServer,
    _ configure: (inout Configuration) -> Void = { _ in }
) -> Dispatcher {
    var configuration = Configuration()
    configuration.baseURL = server.baseURL
    configuration.callbackQueue = .immediate
    // Longer than the default 30 s: on a loaded CI machine a test's task can wait that long to be
    // resumed, and a request it holds open on purpose (to cancel it) must not end as idle meanwhile.
    configuration.idleTimeout = 120
    configure(&configuration)
    return Dispatcher(configuration: configuration)
}

extension Dispatcher {
    /// Sends and awaits the result through the completion closure.
    func result<R: Request>(_ request: R) async -> Result<Response<R>, NetworkError> {
        await completion { send(request, completion: $0) }
    }
}

/// Starts a call that reports its one result to a closure, and waits for that result. The result
/// crosses in a lock as well as through the continuation: when the closure runs before the task has
/// suspended, the Swift runtime lets the task go on with no step the thread sanitizer sees
/// (swiftlang/swift#57803), and TSan reports the response's fields as raced. The lock is that step.
func completion<T: Sendable>(isolation: isolated (any Actor)? = #isolation, of start: (@escaping @Sendable (T) -> Void) -> Void) async -> T {
    let box = Locked<T?>(nil)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        start { result in
            box.withLock { $0 = result }
            continuation.resume()
        }
    }
    return box.withLock { $0! }
}

/// A thread-safe counter / box for tests.
final class Box<Value: Sendable>: Sendable {
    private let storage: Locked<Value>
    init(_ value: Value) { storage = Locked(value) }
    var value: Value { storage.withLock { $0 } }
    func mutate<T>(_ body: (inout Value) -> T) -> T { storage.withLock(body) }
}

/// A client of `server` whose transport is `kind` (a network kind: URLSession or libcurl), configured
/// further by `configure`: how the dispatcher-level suites run on both transports.
func makeClient(
    _ server: LoopbackServer,
    on kind: TransportUnderTest,
    _ configure: (inout Configuration) -> Void = { _ in }
) -> Dispatcher {
    makeClient(server) {
        $0.transport = kind.factory
        configure(&$0)
    }
}
