import Foundation

/// An ad-hoc typed request, for when a type per endpoint is too much: a method, a path, parameters or
/// an `Encodable` body, and the type the answer decodes to.
///
/// ```swift
/// let user = try await Dispatcher.shared.response(for: .get("/users/1", as: User.self)).value
/// let post = try await Dispatcher.shared.response(for: .post("/posts", body: draft, as: Post.self)).value
/// ```
///
/// Observers key on request types, and every ad-hoc request decoding the same type is one type,
/// `Endpoint<Value>`: an observer of `Endpoint<User>.self` hears every ad-hoc request answered with a
/// `User`, and tells them apart by ``path`` (or follows one send by ``RequestEvent/sendID``).
///
/// ```swift
/// Dispatcher.shared.addObserver(self, for: Endpoint<User>.self) { screen, event in
///     if event.request.path == "/users/1", let user = event.response?.value { screen.show(user) }
/// }
/// ```
public struct Endpoint<Value: Decodable & Sendable>: Request {
    /// The method.
    public var method: HTTPMethod
    /// The path below the base URL, or an absolute URL.
    public var path: String
    /// The parameters: fields of the form with a multipart body; the query with any other body, and for
    /// `GET`, `HEAD` and `DELETE`; otherwise the body, encoded with ``Configuration/bodyEncoding``.
    public var parameters: JSON?
    /// The body, when it has one.
    public var body: RequestBody?
    /// Extra header fields.
    public var headers: HTTPHeaders
    /// The deadline of each attempt; `nil` uses ``Configuration/timeout``.
    public var timeout: TimeInterval?
    /// The longest wait for the next byte in each attempt; `nil` uses ``Configuration/idleTimeout``.
    public var idleTimeout: TimeInterval?
    /// How it uses the response cache; `nil`, no caching.
    public var cachePolicy: CachePolicy?

    /// Creates an ad-hoc request decoding its answer as `Value`.
    public init(
        _ method: HTTPMethod = .get, _ path: String, parameters: JSON? = nil, body: RequestBody? = nil, headers: HTTPHeaders = [:],
        timeout: TimeInterval? = nil, idleTimeout: TimeInterval? = nil, cachePolicy: CachePolicy? = nil, as type: Value.Type = Value.self
    ) {
        self.method = method
        self.path = path
        self.parameters = parameters
        self.body = body
        self.headers = headers
        self.timeout = timeout
        self.idleTimeout = idleTimeout
        self.cachePolicy = cachePolicy
    }
}

extension Request {
    /// `GET path`, its answer decoded as `type`: `response(for: .get("/users/1", as: User.self))`.
    public static func get<V>(_ path: String, parameters: JSON? = nil, headers: HTTPHeaders = [:], as type: V.Type = V.self) -> Self
    where Self == Endpoint<V> {
        Endpoint(.get, path, parameters: parameters, headers: headers)
    }

    /// `POST path` with `body` encoded as JSON, its answer decoded as `type`.
    public static func post<V>(_ path: String, body: some Encodable & Sendable, headers: HTTPHeaders = [:], as type: V.Type = V.self) -> Self
    where Self == Endpoint<V> {
        Endpoint(.post, path, body: .encodable(body), headers: headers)
    }

    /// `PUT path` with `body` encoded as JSON, its answer decoded as `type`.
    public static func put<V>(_ path: String, body: some Encodable & Sendable, headers: HTTPHeaders = [:], as type: V.Type = V.self) -> Self
    where Self == Endpoint<V> {
        Endpoint(.put, path, body: .encodable(body), headers: headers)
    }

    /// `PATCH path` with `body` encoded as JSON, its answer decoded as `type`.
    public static func patch<V>(_ path: String, body: some Encodable & Sendable, headers: HTTPHeaders = [:], as type: V.Type = V.self) -> Self
    where Self == Endpoint<V> {
        Endpoint(.patch, path, body: .encodable(body), headers: headers)
    }

    /// `DELETE path`, its answer decoded as `type` (``NoContent`` for an answer you don't read).
    public static func delete<V>(_ path: String, parameters: JSON? = nil, headers: HTTPHeaders = [:], as type: V.Type = V.self) -> Self
    where Self == Endpoint<V> {
        Endpoint(.delete, path, parameters: parameters, headers: headers)
    }
}
