import Foundation

/// Settings shared by every request a ``Dispatcher`` sends: the Swift form of `YTKNetworkConfig`.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.baseURL = URL(string: "https://api.example.com") }
/// let client = Dispatcher(configuration: Configuration {
///     $0.baseURL = URL(string: "https://api.example.com/v2")
///     $0.callbackQueue = .queue(myQueue)
/// })
/// ```
///
/// A dispatcher's configuration changes only through ``Dispatcher/updateConfiguration(_:)``, an atomic
/// update; each send uses the configuration as it was when it was sent (the dispatcher keeps it in an
/// immutable snapshot that its sends share, so a send copies no setting). Every setting may change at
/// any time: the transport settings (``transport``, ``maximumConnectionsPerHost``, ``cookies``,
/// ``serverTrust``, ``proxy``) through
/// a new transport, made at the next send.
public struct Configuration: Sendable {
    /// The base URL relative paths are joined to (keeping its own path). Default: none.
    public var baseURL: URL? {
        didSet { baseJoin = baseURL.flatMap { URLResolver.JoinBase($0, remembering: true) } }
    }

    /// The base URL of requests with ``Request/useCDN``. Default: none.
    public var cdnURL: URL? {
        didSet { cdnJoin = cdnURL.flatMap { URLResolver.JoinBase($0, remembering: true) } }
    }

    /// ``baseURL`` and ``cdnURL`` prepared for joining, once per change rather than once per send.
    private(set) var baseJoin: URLResolver.JoinBase?
    private(set) var cdnJoin: URLResolver.JoinBase?

    /// Header fields sent with every request; a request's own ``Request/headers`` win. Default: none.
    public var defaultHeaders: HTTPHeaders = [:]

    /// URL filters every request's URL passes through, in order (see ``URLFilter``). Default: none.
    public var urlFilters: [any URLFilter] = []

    /// Adapters every `URLRequest` passes through, in order (see ``RequestAdapter``). Default: none.
    public var adapters: [any RequestAdapter] = []

    /// Asynchronous interceptors of every attempt, in order, after the adapters: token fetch
    /// and refresh-on-401 (see ``RequestInterceptor``, ``AuthenticationInterceptor``). Default: none.
    public var interceptors: [any RequestInterceptor] = []

    /// Hooks every result passes through, in order (see ``ResponseHook``). Default: none.
    public var responseHooks: [any ResponseHook] = []

    /// Monitors of every send: metrics, a loading indicator (``RequestAccessory``)… (see
    /// ``EventMonitor``). Default: none.
    public var monitors: [any EventMonitor] = []

    /// How failed requests are retried; a request's ``RequestPipeline/retryPolicy`` wins. Default: `.none`.
    public var retryPolicy: RetryPolicy = .none

    /// How much is logged, by a monitor called before ``monitors``. Default: `.off`.
    public var logMode: LogMode = .off

    /// Where log lines go. Default: ``ConsoleLogger``.
    public var logger: any NetworkLogger = ConsoleLogger()

    /// How the parameters of a request without a ``Request/body`` are encoded when its method isn't
    /// `GET`, `HEAD` or `DELETE` (`POST`, `PUT`, `PATCH`…) and its ``Request/parameterEncoding`` is
    /// `nil`. Default: `.form`.
    public var bodyEncoding: ParameterEncoding = .form

    /// Status codes that count as success. Default: 200..<300.
    public var acceptableStatusCodes: StatusCodes = .success

    /// Acceptable MIME types of JSON responses (any `+json` type is accepted when `application/json`
    /// is; `type/*` accepts any subtype). ``anyContentType`` (`*/*`) accepts any type; an empty set
    /// accepts none. Default: `application/json`, `text/json`, `text/javascript`.
    public var acceptableContentTypes: Set<String> = ["application/json", "text/json", "text/javascript"]

    /// The content-type pattern that accepts any type: `["*/*"]`.
    public static let anyContentType: Set<String> = ["*/*"]

    /// The deadline of each attempt of a request in seconds, from its start to the last byte, enforced by
    /// Switchboard (URLSession's resource timeout is ignored on Linux). Default: 60.
    public var timeout: TimeInterval = 60

    /// The idle timeout in seconds: the longest wait for the next byte; when it passes the send fails
    /// with ``NetworkError/idleTimeout(after:)``. Default: 30. 0, a negative number, NaN or infinity
    /// means no idle timeout (the deadline, ``timeout``, still ends a send); more than 23 days is 23 days.
    ///
    /// The libcurl transport keeps a timer per transfer, to the millisecond. FoundationNetworking (the
    /// URLSession transport on Linux) counts whole seconds, so there a fraction is rounded up: 0.5 s
    /// fires at 1 s, never early.
    public var idleTimeout: TimeInterval = 30

    /// The most connections the session opens to one host. Default: 6.
    public var maximumConnectionsPerHost: Int = 6

    /// The largest response body accepted, in bytes; a larger one fails with
    /// ``NetworkError/responseTooLarge(limit:)``. Default: 64 MiB.
    public var maximumResponseSize: Int = 64 << 20

    /// The response cache used by requests with a ``Request/cachePolicy``; `nil` turns caching off.
    /// Default: ``ResponseCache/shared`` (the caches folder's `Switchboard/Responses`, touched only
    /// when a request caches).
    public var cache: ResponseCache? = .shared

    /// The app's version: a cached entry stored by another version is not used. Default: the main
    /// bundle's `CFBundleShortVersionString` (empty when there is none).
    public var appVersion: String = Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String ?? ""

    /// Multipart bodies up to this many bytes are assembled in memory; larger ones in a temporary file
    /// that is uploaded from disk and removed when the send ends. Default: 10 MiB.
    public var multipartMemoryThreshold: Int = 10 << 20

    /// Where temporary files go (large multipart bodies). Default: the system's temporary directory.
    public var temporaryDirectory: URL = FileManager.default.temporaryDirectory

    /// Where partial downloads and what is needed to resume them are kept (see ``DownloadRequest``).
    /// Default: `Switchboard/PartialDownloads` in the user's caches directory.
    public var partialDownloadsDirectory: URL = Configuration.defaultPartialDownloadsDirectory

    /// Where the completion closures of ``Dispatcher/send(_:completion:)`` and the accessories'
    /// `willStop` and `didStop` are called (`willStart` runs on the thread that calls `send`). Observers
    /// choose their own: the main actor, or a queue given to `addObserver`. Default: `.main`.
    public var callbackQueue: CallbackQueue = .main

    /// Which redirects are followed: how many, to which schemes. Default: ``RedirectRules/default`` (up
    /// to 16, http and https).
    public var redirects: RedirectRules = .default

    /// Whether identical sends in flight at the same time share one transfer, for the requests whose
    /// ``Request/coalescesDuplicates`` says they may (by default `GET` and `HEAD`). Each send keeps its
    /// own events, deadline and terminal event; cancelling one leaves the others waiting. Default: `true`.
    public var coalescesDuplicates: Bool = true

    /// Which cookies are stored and sent. Default: ``CookiePolicy/inMemory``.
    public var cookies: CookiePolicy = .inMemory

    /// What makes the transport requests travel by. Default: ``TransportFactory/urlSession``. A
    /// change applies from the next send (sends in flight finish on their transport). A dispatcher
    /// created with a transport of its own ignores it.
    public var transport: TransportFactory = .urlSession

    /// How requests reach their servers: straight, through the proxy the environment names, or through
    /// an HTTP proxy of the app's (see ``ProxySetting``). Default: ``ProxySetting/environment``. A
    /// transport setting: a change makes a new transport at the next send (which reads the environment
    /// again). The URLSession transport on Linux can't be told a proxy: ``ProxySetting/http(_:)``
    /// fails every send there with ``NetworkError/proxyFailed(reason:)``. On Apple platforms (written
    /// for, not built or tested in this project's CI) it applies only ``ProxySetting/environment``.
    public var proxy: ProxySetting = .environment {
        didSet { routeAndTrustAreDefault = serverTrust.isSystemDefault && proxy == .environment }
    }

    /// Whether ``serverTrust`` and ``proxy`` are the defaults (worked out when either is set, so a send
    /// asks a transport about them only when they are not).
    private(set) var routeAndTrustAreDefault = true

    /// Whom TLS connections trust, per host or for all hosts: CAs, pinned keys or certificates, a client
    /// certificate, development hosts (see ``ServerTrust`` and ``TrustPolicy``). Default:
    /// ``ServerTrust/system``. A transport setting: a change makes a new transport at the next send.
    /// Only the libcurl transport applies a policy other than the system's; on the URLSession transport
    /// such a setting fails every send with ``NetworkError/unsupportedTrustPolicy(reason:)``.
    public var serverTrust: ServerTrust = .system {
        didSet { routeAndTrustAreDefault = serverTrust.isSystemDefault && proxy == .environment }
    }

    /// Names of headers and parameters (query, form or JSON body) whose values are never logged or shown
    /// in a cURL description, besides the built-in ones (`Authorization`, `Cookie`… and names containing
    /// `token`, `key`, `secret`, `auth`, `session`, `password`, `passwd`, `signature` or `credential`).
    /// Compared case-insensitively, as whole names. Default: none. A URL's user info is never shown
    /// either, nor a query, fragment or form value that holds a URL with user info (a redirect target).
    public var redactedNames: Set<String> = []

    /// Whether request bodies are compressed before they are sent (see ``BodyCompression``). Default:
    /// `.none`; a request may ask for its own (``Request/bodyCompression``).
    public var bodyCompression: BodyCompression = .none

    /// How `Encodable` bodies are encoded and typed responses (``Request/Value``) decoded: the date,
    /// key and data strategies. Default: Foundation's (see ``JSONCoding``).
    public var jsonCoding = JSONCoding()

    /// The redaction rules for logs and cURL descriptions.
    var redaction: Redaction { Redaction(extraNames: redactedNames) }

    /// The monitors of every send: logging (when on), then ``monitors``.
    var allMonitors: [any EventMonitor] {
        logMode == .off ? monitors : [LoggingMonitor(mode: logMode, logger: logger, redaction: redaction)] + monitors
    }

    /// Creates the default configuration.
    public init() {}

    /// Creates a configuration from the defaults, changed by `configure`.
    public init(_ configure: (inout Configuration) -> Void) {
        configure(&self)
    }
}

/// Which cookies a dispatcher stores and sends.
public enum CookiePolicy: Sendable, Hashable {
    /// No cookies: `Set-Cookie` is ignored and no `Cookie` header is added.
    case none
    /// An in-memory jar per dispatcher: cookies set by responses (redirects included) are sent on later
    /// requests to their domain, until the dispatcher is released.
    case inMemory
    /// `HTTPCookieStorage.shared`, shared with the rest of the app.
    case shared
}

/// Where a callback runs.
public enum CallbackQueue: Sendable {
    /// The main queue (the main actor).
    case main
    /// A queue of yours. Use a serial queue so one observer sees one request's events in order.
    case queue(DispatchQueue)
    /// At once, on the thread that produced the event: Dispatcher's serial transport queue for progress
    /// and most results (a global queue for large bodies, response hooks or logging; a concurrency task
    /// when interceptors adapt or decide); the thread that called `send` for `started`, for a request
    /// that could not be built and for a cancel before the first transfer; the thread that called
    /// `cancel()` between retries, while interceptors adapt or decide; a global queue when a transport
    /// doesn't report a stop within a second; a concurrency task when the response cache answers from
    /// disk. Keep such callbacks short, and never block in them (a concurrency task's thread is one of
    /// a few the whole process shares).
    case immediate

    /// Whether this is the main queue.
    @usableFromInline var isMain: Bool {
        switch self {
        case .main: true
        case .queue(let queue): MainQueue.isMain(queue)
        case .immediate: false
        }
    }

    /// The queue to dispatch to; for `.main` always the same object (``MainQueue/queue``), so that the
    /// registry can tell one main-queue group from another and join a send's closure to it.
    var dispatchQueue: DispatchQueue? {
        switch self {
        case .main: MainQueue.queue
        case .queue(let queue): queue
        case .immediate: nil
        }
    }

    /// The queue as the registry groups by it (by identity): ``MainQueue/queue`` for `.main` and for
    /// `.queue(DispatchQueue.main)`, so that both are one main-queue group and a send's closure on
    /// either joins its observers' block.
    var groupQueue: DispatchQueue? {
        if case .queue(let queue) = self, MainQueue.isMain(queue) { return MainQueue.queue }
        return dispatchQueue
    }

    /// Runs `work` on this queue (asynchronously unless `.immediate`).
    func run(_ work: @escaping @Sendable () -> Void) {
        if let queue = dispatchQueue { queue.async(execute: work) } else { work() }
    }
}

extension Configuration {
    /// `Switchboard/PartialDownloads` in the user's caches directory (the temporary directory when
    /// there is none).
    public static var defaultPartialDownloadsDirectory: URL {
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        return caches.appendingPathComponent("Switchboard/PartialDownloads", isDirectory: true)
    }
}
