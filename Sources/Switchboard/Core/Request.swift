import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One endpoint of your API, described as a value: the Swift form of YTKNetwork's `YTKBaseRequest`.
///
/// Only ``path`` is required; every other member has a default.
///
/// ```swift
/// struct GetUserInfo: Request {
///     let id: String
///     var path: String { "/users/\(id)" }
/// }
///
/// struct Register: Request {
///     let username: String, password: String
///     var method: HTTPMethod { .post }
///     var path: String { "/register" }
///     var parameters: JSON? { ["username": .string(username), "password": .string(password)] }
/// }
/// ```
///
/// ## How the URL is built
/// - A ``path`` that is an absolute URL (`https://…`) is used as is: no base URL and no URL filters.
/// - Otherwise the base URL is ``baseURL`` or, when that is `nil`, ``Configuration/baseURL`` (with
///   ``useCDN``: ``cdnURL`` or ``Configuration/cdnURL``), and the
///   path is appended to the base URL's own path: `https://h/v2` with `users/1` or `/users/1` both give
///   `https://h/v2/users/1`. (YTKNetwork drops the base URL's path; Switchboard keeps it.)
/// - Query parameters are appended, then the URL filters run (the configuration's, then the request's
///   ``pipeline``'s).
/// - Headers: ``Configuration/defaultHeaders``, then the parameter encoding's `Content-Type`, then
///   ``headers`` (the request wins), then ``credentials`` as `Authorization`; then the adapters.
/// - ``makeURLRequest(baseURL:)`` returning a request bypasses URL building, parameter encoding and
///   headers entirely; validation, callbacks and observers still apply.
public protocol Request: Sendable {
    /// What the response's body decodes to: ``Response/value``, decoded once in the pipeline with
    /// ``Configuration/jsonCoding``'s strategies, off the main thread. Default: ``JSON``, the body as a
    /// JSON tree (``Response/json``). An empty body fails the decode unless the type is
    /// ``EmptyBodyDecodable`` (``NoContent``, an `Optional`).
    ///
    /// ```swift
    /// struct GetUser: Request {
    ///     typealias Value = User
    ///     let id: Int
    ///     var path: String { "/users/\(id)" }
    /// }
    /// let user: User = try await Dispatcher.shared.response(for: GetUser(id: 1)).value
    /// ```
    associatedtype Value: Decodable & Sendable = JSON

    /// The HTTP method. Default: `GET`.
    var method: HTTPMethod { get }

    /// The base URL for this request; `nil` (the default) uses ``Configuration/baseURL``.
    var baseURL: URL? { get }

    /// The path below the base URL (`/users/1`), or an absolute URL used as is.
    var path: String { get }

    /// Parameters, a ``JSON`` object for query and form encoding; any JSON for `.json`. Default: none.
    var parameters: JSON? { get }

    /// Where the parameters go. Default `nil`: with a multipart ``body``, fields of the form (before its
    /// parts); with any other ``body``, the query; without a body, the query for `GET`, `HEAD` and
    /// `DELETE` and otherwise the body, encoded with ``Configuration/bodyEncoding``. `.query` is always
    /// the query; `.form` with a multipart body is its fields. With any ``body``, `.json`, and `.form`
    /// unless the body is multipart, fail the send with ``NetworkError/invalidRequest(reason:)``.
    var parameterEncoding: ParameterEncoding? { get }

    /// A body given as it is (bytes, text, JSON, an `Encodable` value, a file or a multipart form),
    /// instead of one encoded from ``parameters``. With a multipart body, parameters become fields of
    /// the form; with any other body, they go in the query (see ``parameterEncoding``). Default: none.
    var body: RequestBody? { get }

    /// Whether this request's body is compressed before it is sent (see ``BodyCompression``); `nil`
    /// (the default) uses ``Configuration/bodyCompression``.
    var bodyCompression: BodyCompression? { get }

    /// Extra header fields. Names and values are checked: a CR, LF or NUL fails the request with
    /// ``NetworkError/invalidRequest(reason:)`` before anything is sent.
    var headers: HTTPHeaders { get }

    /// HTTP Basic credentials, sent pre-emptively as an `Authorization` header (unless ``headers`` has
    /// one). For a ``makeURLRequest(baseURL:)`` request without that header they answer a Basic challenge
    /// from the request's own origin, once. A 401 after they were sent fails with
    /// ``NetworkError/unauthorized(_:)``.
    var credentials: Credentials? { get }

    /// The deadline of each attempt in seconds, from its start to the last byte; `nil` uses
    /// ``Configuration/timeout``. With retries a send can take several deadlines plus the waits between.
    var timeout: TimeInterval? { get }

    /// How long each attempt may go without a byte sent or received, in seconds, before it fails with
    /// ``NetworkError/idleTimeout(after:)``; `nil` uses ``Configuration/idleTimeout`` (30 s), or for a
    /// ``makeURLRequest(baseURL:)`` request the `timeoutInterval` it set (other than 60 s). Waiting
    /// for a free connection counts as idle. YTKNetwork's `requestTimeoutInterval` (an
    /// `NSURLRequest.timeoutInterval`) is this timeout, not ``timeout``. 0, a negative number, NaN or
    /// infinity means none (``timeout`` still ends the attempt); more than 23 days is 23 days.
    var idleTimeout: TimeInterval? { get }

    /// Scheduling priority. Default: `.default`.
    var priority: RequestPriority { get }

    /// What the response must be: status codes and content types (falling back to the configuration's)
    /// and the JSON's shape. Default: `.default`.
    var validation: Validation { get }

    /// Whether the body is JSON (checked and decoded) or raw data. Default: `.json`.
    var responseFormat: ResponseFormat { get }

    /// Whether observers receive ``RequestEvent/Kind/progress(_:_:)`` events for this request. Default: `false`,
    /// which saves a delivery per received chunk on the small JSON requests most apps make.
    var reportsProgress: Bool { get }

    /// Whether the request goes to the CDN: ``cdnURL`` or ``Configuration/cdnURL`` instead of the base
    /// URL (YTKNetwork's `useCDN`). Default: `false`.
    var useCDN: Bool { get }

    /// The CDN URL for this request; `nil` (the default) uses ``Configuration/cdnURL``.
    var cdnURL: URL? { get }

    /// How this request uses the response cache (``Configuration/cache``): a time to live, a mode
    /// (cache-else-load, cached-then-load, network-else-cache), a version and sensitive data. Default:
    /// `nil`, no caching.
    var cachePolicy: CachePolicy? { get }

    /// Whether an identical send already in flight may carry this one: the same method, final URL,
    /// headers, body and transfer options make one transfer, and each send still gets its own events
    /// and terminal event (``Configuration/coalescesDuplicates`` turns it off for a whole dispatcher).
    /// Default: `true` for `GET` and `HEAD`, `false` for every other method.
    var coalescesDuplicates: Bool { get }

    /// What this request adds to the configuration's pipeline: URL filters, adapters, response hooks,
    /// monitors, a retry policy of its own. Default: nothing (``RequestPipeline/inherited``).
    var pipeline: RequestPipeline { get }

    /// A fully custom `URLRequest` (YTKNetwork's `buildCustomUrlRequest`). Return `nil` (the default) to
    /// let Switchboard build it. A returned request is sent as it is: ``path``, ``parameters``,
    /// ``headers`` and the configuration's base URL are not applied; the request adapters are, and its
    /// method, URL and headers are checked. (On Linux, `URLRequest.setValue` silently drops a value
    /// with a CR or LF before Switchboard can see it; assign `allHTTPHeaderFields` instead, or add such
    /// headers in a ``RequestAdapter``, and they are checked.) Its `timeoutInterval` is its idle
    /// timeout, unless it is 60 s: `URLRequest`'s default, which can't be told from one not set, so
    /// the configuration's applies then (set ``idleTimeout`` for 60 s).
    /// - Parameter baseURL: the base URL the request would otherwise use, for convenience.
    /// - Throws: any error; it is reported as ``NetworkError/invalidRequest(reason:)``.
    func makeURLRequest(baseURL: URL?) throws -> URLRequest?
}

extension Request {
    public var method: HTTPMethod { .get }
    public var baseURL: URL? { nil }
    public var parameters: JSON? { nil }
    public var parameterEncoding: ParameterEncoding? { nil }
    public var body: RequestBody? { nil }
    public var bodyCompression: BodyCompression? { nil }
    public var headers: HTTPHeaders { HTTPHeaders() }
    public var credentials: Credentials? { nil }
    public var timeout: TimeInterval? { nil }
    public var idleTimeout: TimeInterval? { nil }
    public var priority: RequestPriority { .default }
    public var validation: Validation { .default }
    public var useCDN: Bool { false }
    public var cdnURL: URL? { nil }
    public var responseFormat: ResponseFormat { .json }
    public var reportsProgress: Bool { false }
    public var pipeline: RequestPipeline { RequestPipeline() }
    public var cachePolicy: CachePolicy? { nil }
    public var coalescesDuplicates: Bool { method == .get || method == .head }
    public func makeURLRequest(baseURL: URL?) throws -> URLRequest? { nil }
}
