import Foundation

/// A small real HTTP/1.1 server on 127.0.0.1 for tests, demos and benchmarks.
///
/// Each connection gets its own thread with blocking sockets; connections are kept alive until the client
/// closes or sends `Connection: close`. Request bodies may use `Content-Length` or chunked encoding, and
/// `Expect: 100-continue` is answered. Route handlers run on the connection's thread.
///
/// ```swift
/// let server = try LoopbackServer.standard()          // every standard and demo route, ephemeral port
/// defer { server.stop() }
/// let url = server.url("/echo?x=1")                    // http://127.0.0.1:PORT/echo?x=1
///
/// let custom = LoopbackServer()
/// custom.route("GET", "/users/:id") { request in .json(["id": request.pathParameters["id"] ?? ""]) }
/// try custom.start()
/// ```
///
/// A server is started once; after `stop()` it cannot be started again. Dropping the last reference stops it.
/// Its Darwin socket code (`SO_NOSIGPIPE`, `sin_len`, waking `accept` on stop) is written for, not built
/// or tested in this project's CI.
public final class LoopbackServer: Sendable {
    let core: ServerCore

    /// Creates a server that will listen on an ephemeral port; call ``start()`` to begin serving.
    public convenience init() {
        self.init(port: 0)
    }

    /// Creates a server that will listen on `port` (0 = an ephemeral port chosen by the system).
    /// - Parameter port: The TCP port on 127.0.0.1.
    public init(port: UInt16) {
        core = ServerCore(port: port)
    }

    deinit {
        core.stop()
    }

    /// A started server with every standard route (echo, status, delay, drip, …) and demo route installed.
    /// - Parameter port: The TCP port on 127.0.0.1; 0 (the default) picks an ephemeral port.
    /// - Throws: ``LoopbackServerError`` when the socket cannot be bound.
    public static func standard(port: UInt16 = 0) throws -> LoopbackServer {
        let server = LoopbackServer(port: port)
        server.installStandardRoutes()
        server.installDemoRoutes()
        try server.start()
        return server
    }

    /// Binds 127.0.0.1 and starts accepting connections on a background thread.
    /// - Throws: ``LoopbackServerError/alreadyStarted`` on a second call, or
    ///   ``LoopbackServerError/socket(call:errno:)`` when binding fails.
    public func start() throws {
        try core.start()
    }

    /// Closes the listener and every open connection, and waits (briefly) for their threads to finish.
    /// Idempotent; the port is free again when it returns.
    public func stop() {
        core.stop()
    }

    /// The bound port; 0 before ``start()``.
    public var port: UInt16 {
        core.state.withLock { $0.port }
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: URL {
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// The URL of `pathAndQuery` on this server, e.g. `url("/echo?x=1")`.
    /// - Parameter pathAndQuery: A path with optional query; a missing leading `/` is added.
    /// - Returns: An absolute URL; if the text is not a valid URL it is percent-encoded first.
    public func url(_ pathAndQuery: String) -> URL {
        let suffix = pathAndQuery.hasPrefix("/") ? pathAndQuery : "/" + pathAndQuery
        let text = "http://127.0.0.1:\(port)" + suffix
        if let url = URL(string: text) { return url }
        let escaped = text.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? text
        return URL(string: escaped) ?? baseURL
    }

    /// Adds a route. May be called before or after ``start()``.
    ///
    /// Patterns are `/`-separated: literals, `:name` captures (see ``ServerRequest/pathParameters``) and a
    /// trailing `*` matching any rest. Literal patterns are tried before patterns with captures; otherwise
    /// the most recently added matching route wins, so a test can override a standard route. `HEAD`
    /// requests fall back to `GET` routes and get no body.
    /// - Parameters:
    ///   - method: The method to match (case-insensitive), or `nil` for any.
    ///   - pattern: A path pattern such as `"/users/:id"` or `"/files/*"`.
    ///   - handler: Called on the connection's thread; returns the response.
    public func route(_ method: String?, _ pattern: String, _ handler: @escaping @Sendable (ServerRequest) -> ServerResponse) {
        core.routes.withLock { $0.add(method: method, pattern: pattern, handler: handler) }
    }

    /// Makes requests to `path` get `response` as soon as their head arrives, before (and without)
    /// reading their body, and then closes the connection: a server that refuses an upload midway.
    public func answerBeforeBody(_ path: String, with response: ServerResponse) {
        core.earlyAnswers.withLock { $0[path] = response }
    }

    /// Adds a route that reads the request body as it arrives instead of holding it: `handler` gets
    /// the request (with an empty body) and the body's ``UploadDigest``. For uploads of any size.
    /// - Parameters:
    ///   - method: the method, or `nil` for any.
    ///   - path: a literal path (no captures); the query is ignored.
    public func sink(_ method: String?, _ path: String, _ handler: @escaping @Sendable (ServerRequest, UploadDigest) -> ServerResponse) {
        core.sinks.withLock { $0["\(method?.uppercased() ?? "*") \(path)"] = handler }
    }

    /// Makes the sink route at `path` read its bodies slowly, pausing `pausePerPiece` seconds after
    /// each piece of at most 64 KiB: an upload stays under way (the client mid-body) for as long as a
    /// test needs. A connection the client closes meanwhile just ends.
    public func readBodiesSlowly(at path: String, pausePerPiece: TimeInterval) {
        core.slowBodies.withLock { $0[path] = pausePerPiece }
    }

    /// Answers `request` in-process, without a connection, as a connection would route it (the hit is
    /// counted): for in-process test transports that share this server's routes.
    public func respond(to request: ServerRequest) -> ServerResponse {
        var request = request
        core.recordHit(path: request.path)
        if let sink = core.sink(method: request.method, target: request.path) {
            var digest = UploadDigest(contentType: request.header("Content-Type"))
            digest.update(request.body)
            return sink(request, digest)
        }
        return core.respond(to: &request)
    }

    /// How many requests reached this exact path (without the query), whatever their method or outcome.
    /// - Parameter path: A path such as `"/flaky/a"`.
    public func hits(_ path: String) -> Int {
        core.state.withLock { $0.hits[path] ?? 0 }
    }

    /// Lets every request to `/concurrent/<key>?hold=release` (held until now) be answered, and the
    /// later ones at once.
    public func release(_ key: String) {
        core.state.withLock { _ = $0.released.insert(key) }
    }

    /// The most requests to `/concurrent/<key>` that were in progress at once.
    public func concurrencyPeak(_ key: String) -> Int {
        core.state.withLock { $0.concurrent[key]?.peak ?? 0 }
    }

    /// How many complete requests were received since ``start()``.
    public var totalRequests: Int {
        core.state.withLock { $0.totalRequests }
    }

    /// How many TCP connections were accepted since ``start()``.
    public var connectionsAccepted: Int {
        core.state.withLock { $0.connectionsAccepted }
    }

    /// How many connections are open right now.
    public var openConnections: Int {
        core.state.withLock { $0.connections.count }
    }
}
