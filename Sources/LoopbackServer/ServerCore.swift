import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The shared machinery behind a ``LoopbackServer``: listener, accept thread, connection threads, routes
/// and counters. Threads hold this object, not the `LoopbackServer`, so an unreferenced server deinits
/// and stops itself.
final class ServerCore: Sendable {
    /// Everything mutable, guarded by one lock.
    struct State: Sendable {
        enum Phase: Sendable { case idle, running, stopped }
        var phase = Phase.idle
        var listener: Int32 = -1
        var port: UInt16 = 0
        var acceptThreadRunning = false
        /// Open connection sockets; a connection thread removes its socket here before closing it, so
        /// `stop()` never shuts down a descriptor number that was reused.
        var connections: Set<Int32> = []
        var connectionThreads = 0
        var hits: [String: Int] = [:]
        /// `/concurrent/:key`: requests in progress now, the most at once, and how many arrived, by key.
        var concurrent: [String: (now: Int, peak: Int, arrived: Int)] = [:]
        /// `/concurrent/:key?hold=release`: the keys the test has released.
        var released: Set<String> = []
        var totalRequests = 0
        var connectionsAccepted = 0
    }

    let requestedPort: UInt16
    let state = Locked(State())
    let routes = Locked(Router())
    /// Routes that answer as soon as the head arrives, without reading the body, then close: by path.
    let earlyAnswers = Locked([String: ServerResponse]())
    /// Routes that read the body as it arrives, by method (`*` for any) and path.
    let sinks = Locked([String: @Sendable (ServerRequest, UploadDigest) -> ServerResponse]())
    let stopSignal = StopSignal()
    /// Sink paths whose bodies are read slowly: the pause after each piece read.
    let slowBodies = Locked([String: TimeInterval]())

    init(port: UInt16) {
        requestedPort = port
    }

    func start() throws {
        try state.withLock { state in
            guard state.phase == .idle else { throw LoopbackServerError.alreadyStarted }
            let (fd, port) = try SocketIO.makeListener(port: requestedPort)
            state.phase = .running
            state.listener = fd
            state.port = port
            state.acceptThreadRunning = true
            let thread = Thread { [self] in acceptLoop(listener: fd) }
            thread.name = "loopback-accept-\(port)"
            thread.start()
        }
    }

    func stop() {
        let (wasRunning, port) = state.withLock { state -> (Bool, UInt16) in
            let wasRunning = state.phase == .running
            state.phase = .stopped
            if wasRunning {
                for fd in state.connections { SocketIO.shutdownBoth(fd) }
                // Linux wakes a blocked accept() on shutdown (done under the lock: the accept thread
                // closes the listener under it too, so the number cannot have been reused).
                if state.listener >= 0 { SocketIO.shutdownBoth(state.listener) }
            }
            return (wasRunning, state.port)
        }
        guard wasRunning else { return }
        stopSignal.raise()
        #if canImport(Darwin)
        Self.poke(port: port)  // Darwin does not wake accept() on shutdown; a throwaway connection does.
        #else
        _ = port
        #endif
        waitUntil(timeout: 5) { !$0.acceptThreadRunning }
        waitUntil(timeout: 2) { $0.connectionThreads == 0 }
    }

    private func waitUntil(timeout: TimeInterval, _ condition: (State) -> Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        while !state.withLock({ condition($0) }) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.001)
        }
    }

    private func acceptLoop(listener: Int32) {
        while true {
            let fd = SocketIO.acceptConnection(listener)
            if fd < 0 {
                let code = errno
                if state.withLock({ $0.phase != .running }) { break }
                if code == EINTR || code == ECONNABORTED { continue }
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    Thread.sleep(forTimeInterval: 0.01)
                    continue
                }
                break
            }
            let accepted = state.withLock { state -> Bool in
                guard state.phase == .running else { return false }
                state.connections.insert(fd)
                state.connectionsAccepted += 1
                state.connectionThreads += 1
                return true
            }
            guard accepted else {
                close(fd)
                break
            }
            let thread = Thread { [self] in
                let reset = ConnectionHandler(fd: fd, core: self).run()
                // Forget the descriptor before closing it, so stop() never touches a reused number.
                state.withLock { _ = $0.connections.remove(fd) }
                if reset {
                    SocketIO.resetOnClose(fd)
                    close(fd)
                } else {
                    SocketIO.gracefulClose(fd)
                }
                state.withLock { $0.connectionThreads -= 1 }
            }
            thread.name = "loopback-connection"
            thread.start()
        }
        state.withLock { state in
            state.listener = -1
            state.acceptThreadRunning = false
            close(listener)
        }
    }

    /// The routed response to `request` (its path parameters filled in), or a 404 / 405.
    func respond(to request: inout ServerRequest) -> ServerResponse {
        let match = routes.withLock { $0.match(method: request.method, path: request.path) }
        switch match {
        case let .found(handler, parameters):
            request.pathParameters = parameters
            return handler(request)
        case let .methodNotAllowed(allowed):
            var response = ServerResponse.json(
                ["error": "method not allowed", "method": request.method, "path": request.path], status: 405)
            response.headers.append(("Allow", allowed.joined(separator: ", ")))
            return response
        case .notFound:
            return .json(["error": "not found", "path": request.path], status: 404)
        }
    }

    /// The sink route for a request, if any.
    func sink(method: String, target: String) -> (@Sendable (ServerRequest, UploadDigest) -> ServerResponse)? {
        let path = String(target.prefix { $0 != "?" })
        return sinks.withLock { $0["\(method) \(path)"] ?? $0["* \(path)"] }
    }

    /// Counts a request that reached routing.
    func recordHit(path: String) {
        state.withLock { state in
            state.totalRequests += 1
            state.hits[path, default: 0] += 1
        }
    }

    #if canImport(Darwin)
    /// Connects to our own listener once so a blocked `accept` returns.
    private static func poke(port: UInt16) {
        let fd = socket(AF_INET, SocketIO.streamType, 0)
        guard fd >= 0 else { return }
        var address = SocketIO.loopbackAddress(port: port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        close(fd)
    }
    #endif
}
