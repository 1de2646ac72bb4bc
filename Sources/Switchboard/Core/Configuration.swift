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
/// update; each send uses the configuration as it was when it was sent. Every setting may change at
/// any time: the transport settings (``transport``, ``maximumConnectionsPerHost``, ``cookies``,
/// ``serverTrust``, ``proxy``) through
/// a new transport, made at the next send.
public struct Configuration: Sendable {
    /// The settings, shared by copies of this configuration until one of them changes (copy on write):
    /// a send copies its dispatcher's configuration, and one reference is cheaper than thirty.
    private var storage = Storage()

    /// The base URL relative paths are joined to (keeping its own path). Default: none.
    public var baseURL: URL? {
        get { storage.baseURL }
        set {
            let storage = unique()
            storage.baseURL = newValue
            storage.baseJoin = newValue.flatMap { URLResolver.JoinBase($0, remembering: true) }
        }
    }

    /// The base URL of requests with ``Request/useCDN``. Default: none.
    public var cdnURL: URL? {
        get { storage.cdnURL }
        set {
            let storage = unique()
            storage.cdnURL = newValue
            storage.cdnJoin = newValue.flatMap { URLResolver.JoinBase($0, remembering: true) }
        }
    }

    /// ``baseURL`` and ``cdnURL`` prepared for joining, once per change rather than once per send.
    var baseJoin: URLResolver.JoinBase? { storage.baseJoin }
    var cdnJoin: URLResolver.JoinBase? { storage.cdnJoin }

    /// Header fields sent with every request; a request's own ``Request/headers`` win. Default: none.
    public var defaultHeaders: HTTPHeaders {
        get { storage.defaultHeaders }
        set { unique().defaultHeaders = newValue }
    }

    /// URL filters every request's URL passes through, in order (see ``URLFilter``). Default: none.
    public var urlFilters: [any URLFilter] {
        get { storage.urlFilters }
        set { unique().urlFilters = newValue }
    }

    /// Adapters every `URLRequest` passes through, in order (see ``RequestAdapter``). Default: none.
    public var adapters: [any RequestAdapter] {
        get { storage.adapters }
        set { unique().adapters = newValue }
    }

    /// Asynchronous interceptors of every attempt, in order, after the adapters: token fetch
    /// and refresh-on-401 (see ``RequestInterceptor``, ``AuthenticationInterceptor``). Default: none.
    public var interceptors: [any RequestInterceptor] {
        get { storage.interceptors }
        set { unique().interceptors = newValue }
    }

    /// Hooks every result passes through, in order (see ``ResponseHook``). Default: none.
    public var responseHooks: [any ResponseHook] {
        get { storage.responseHooks }
        set { unique().responseHooks = newValue }
    }

    /// Monitors of every send: metrics, a loading indicator (``RequestAccessory``)… (see
    /// ``EventMonitor``). Default: none.
    public var monitors: [any EventMonitor] {
        get { storage.monitors }
        set { unique().monitors = newValue }
    }

    /// How failed requests are retried; a request's ``RequestPipeline/retryPolicy`` wins. Default: `.none`.
    public var retryPolicy: RetryPolicy {
        get { storage.retryPolicy }
        set { unique().retryPolicy = newValue }
    }

    /// How much is logged, by a monitor called before ``monitors``. Default: `.off`.
    public var logMode: LogMode {
        get { storage.logMode }
        set { unique().logMode = newValue }
    }

    /// Where log lines go. Default: ``ConsoleLogger``.
    public var logger: any NetworkLogger {
        get { storage.logger }
        set { unique().logger = newValue }
    }

    /// Where parameters of `POST`, `PUT` and `PATCH` go when the request doesn't say. Default: `.form`.
    public var bodyEncoding: ParameterEncoding {
        get { storage.bodyEncoding }
        set { unique().bodyEncoding = newValue }
    }

    /// Status codes that count as success. Default: 200..<300.
    public var acceptableStatusCodes: StatusCodes {
        get { storage.acceptableStatusCodes }
        set { unique().acceptableStatusCodes = newValue }
    }

    /// Acceptable MIME types of JSON responses (any `+json` type is accepted when `application/json`
    /// is; `type/*` accepts any subtype). ``anyContentType`` (`*/*`) accepts any type; an empty set
    /// accepts none. Default: `application/json`, `text/json`, `text/javascript`.
    public var acceptableContentTypes: Set<String> {
        get { storage.acceptableContentTypes }
        set { unique().acceptableContentTypes = newValue }
    }

    /// The content-type pattern that accepts any type: `["*/*"]`.
    public static let anyContentType: Set<String> = ["*/*"]

    /// The deadline of each attempt of a request in seconds, from its start to the last byte, enforced by
    /// Switchboard (URLSession's resource timeout is ignored on Linux). Default: 60.
    public var timeout: TimeInterval {
        get { storage.timeout }
        set { unique().timeout = newValue }
    }

    /// The idle timeout in seconds: the longest wait for the next byte; when it passes the send fails
    /// with ``NetworkError/idleTimeout(after:)``. Default: 30. 0, a negative number, NaN or infinity
    /// means no idle timeout (the deadline, ``timeout``, still ends a send); more than 23 days is 23 days.
    ///
    /// The libcurl transport keeps a timer per transfer, to the millisecond. FoundationNetworking (the
    /// URLSession transport on Linux) counts whole seconds, so there a fraction is rounded up: 0.5 s
    /// fires at 1 s, never early.
    public var idleTimeout: TimeInterval {
        get { storage.idleTimeout }
        set { unique().idleTimeout = newValue }
    }

    /// The most connections the session opens to one host. Default: 6.
    public var maximumConnectionsPerHost: Int {
        get { storage.maximumConnectionsPerHost }
        set { unique().maximumConnectionsPerHost = newValue }
    }

    /// The largest response body accepted, in bytes; a larger one fails with
    /// ``NetworkError/responseTooLarge(limit:)``. Default: 64 MiB.
    public var maximumResponseSize: Int {
        get { storage.maximumResponseSize }
        set { unique().maximumResponseSize = newValue }
    }

    /// The response cache used by requests with a ``Request/cachePolicy``; `nil` turns caching off.
    /// Default: ``ResponseCache/shared`` (the caches folder's `Switchboard/Responses`, touched only
    /// when a request caches).
    public var cache: ResponseCache? {
        get { storage.cache }
        set { unique().cache = newValue }
    }

    /// The app's version: a cached entry stored by another version is not used. Default: the main
    /// bundle's `CFBundleShortVersionString` (empty when there is none).
    public var appVersion: String {
        get { storage.appVersion }
        set { unique().appVersion = newValue }
    }

    /// Multipart bodies up to this many bytes are assembled in memory; larger ones in a temporary file
    /// that is uploaded from disk and removed when the send ends. Default: 10 MiB.
    public var multipartMemoryThreshold: Int {
        get { storage.multipartMemoryThreshold }
        set { unique().multipartMemoryThreshold = newValue }
    }

    /// Where temporary files go (large multipart bodies). Default: the system's temporary directory.
    public var temporaryDirectory: URL {
        get { storage.temporaryDirectory }
        set { unique().temporaryDirectory = newValue }
    }

    /// Where partial downloads and what is needed to resume them are kept (see ``DownloadRequest``).
    /// Default: `Switchboard/PartialDownloads` in the user's caches directory.
    public var partialDownloadsDirectory: URL {
        get { storage.partialDownloadsDirectory }
        set { unique().partialDownloadsDirectory = newValue }
    }

    /// Where the completion closures of ``Dispatcher/send(_:completion:)`` and the accessories'
    /// `willStop` and `didStop` are called (`willStart` runs on the thread that calls `send`). Observers
    /// choose their own: the main actor, or a queue given to `addObserver`. Default: `.main`.
    public var callbackQueue: CallbackQueue {
        get { storage.callbackQueue }
        set { unique().callbackQueue = newValue }
    }

    /// Which redirects are followed: how many, to which schemes. Default: ``RedirectRules/default`` (up
    /// to 16, http and https).
    public var redirects: RedirectRules {
        get { storage.redirects }
        set { unique().redirects = newValue }
    }

    /// Whether identical sends in flight at the same time share one transfer, for the requests whose
    /// ``Request/coalescesDuplicates`` says they may (by default `GET` and `HEAD`). Each send keeps its
    /// own events, deadline and terminal event; cancelling one leaves the others waiting. Default: `true`.
    public var coalescesDuplicates: Bool {
        get { storage.coalescesDuplicates }
        set { unique().coalescesDuplicates = newValue }
    }

    /// Which cookies are stored and sent. Default: ``CookiePolicy/inMemory``.
    public var cookies: CookiePolicy {
        get { storage.cookies }
        set { unique().cookies = newValue }
    }

    /// What makes the transport requests travel by. Default: ``TransportFactory/urlSession``. A
    /// change applies from the next send (sends in flight finish on their transport). A dispatcher
    /// created with a transport of its own ignores it.
    public var transport: TransportFactory {
        get { storage.transport }
        set { unique().transport = newValue }
    }

    /// How requests reach their servers: straight, through the proxy the environment names, or through
    /// an HTTP proxy of the app's (see ``ProxySetting``). Default: ``ProxySetting/environment``. A
    /// transport setting: a change makes a new transport at the next send (which reads the environment
    /// again). The URLSession transport on Linux can't be told a proxy: ``ProxySetting/http(_:)``
    /// fails every send there with ``NetworkError/proxyFailed(reason:)``.
    public var proxy: ProxySetting {
        get { storage.proxy }
        set {
            let storage = unique()
            storage.proxy = newValue
            storage.routeAndTrustAreDefault = storage.serverTrust.isSystemDefault && newValue == .environment
        }
    }

    /// Whether ``serverTrust`` and ``proxy`` are the defaults (worked out when either is set, so a send
    /// asks a transport about them only when they are not).
    var routeAndTrustAreDefault: Bool { storage.routeAndTrustAreDefault }

    /// Whom TLS connections trust, per host or for all hosts: CAs, pinned keys or certificates, a client
    /// certificate, development hosts (see ``ServerTrust`` and ``TrustPolicy``). Default:
    /// ``ServerTrust/system``. A transport setting: a change makes a new transport at the next send.
    /// Only the libcurl transport applies a policy other than the system's; on the URLSession transport
    /// such a setting fails every send with ``NetworkError/unsupportedTrustPolicy(reason:)``.
    public var serverTrust: ServerTrust {
        get { storage.serverTrust }
        set {
            let storage = unique()
            storage.serverTrust = newValue
            storage.routeAndTrustAreDefault = newValue.isSystemDefault && storage.proxy == .environment
        }
    }

    /// Names of headers and parameters (query, form or JSON body) whose values are never logged or shown
    /// in a cURL description, besides the built-in ones (`Authorization`, `Cookie`… and names containing
    /// `token`, `key`, `secret`, `auth`, `session`, `password`, `passwd`, `signature` or `credential`).
    /// Compared case-insensitively, as whole names. Default: none. A URL's user info is never shown
    /// either, nor a query, fragment or form value that holds a URL with user info (a redirect target).
    public var redactedNames: Set<String> {
        get { storage.redactedNames }
        set { unique().redactedNames = newValue }
    }

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

    /// The storage, made unique before it changes.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
        return storage
    }

    /// The stored settings, with their defaults.
    ///
    /// `@unchecked Sendable`: a `Storage` changes only through `unique()`, that is while
    /// exactly one configuration refers to it; once a second copy (on any thread) shares it, neither
    /// changes it again, each copies it first. Shared storage is only read.
    private final class Storage: @unchecked Sendable {
        var baseURL: URL?
        var cdnURL: URL?
        var baseJoin: URLResolver.JoinBase?
        var cdnJoin: URLResolver.JoinBase?
        var defaultHeaders: HTTPHeaders
        var urlFilters: [any URLFilter]
        var adapters: [any RequestAdapter]
        var interceptors: [any RequestInterceptor]
        var responseHooks: [any ResponseHook]
        var monitors: [any EventMonitor]
        var retryPolicy: RetryPolicy
        var logMode: LogMode
        var logger: any NetworkLogger
        var bodyEncoding: ParameterEncoding
        var acceptableStatusCodes: StatusCodes
        var acceptableContentTypes: Set<String>
        var timeout: TimeInterval
        var idleTimeout: TimeInterval
        var maximumConnectionsPerHost: Int
        var maximumResponseSize: Int
        var cache: ResponseCache?
        var appVersion: String
        var multipartMemoryThreshold: Int
        var temporaryDirectory: URL
        var partialDownloadsDirectory: URL
        var callbackQueue: CallbackQueue
        var redirects: RedirectRules
        var coalescesDuplicates: Bool
        var cookies: CookiePolicy
        var transport: TransportFactory
        var redactedNames: Set<String>
        var serverTrust: ServerTrust
        var proxy: ProxySetting
        var routeAndTrustAreDefault: Bool

        init() {
            defaultHeaders = [:]
            urlFilters = []
            adapters = []
            interceptors = []
            responseHooks = []
            monitors = []
            retryPolicy = .none
            logMode = .off
            logger = ConsoleLogger()
            bodyEncoding = .form
            acceptableStatusCodes = .success
            acceptableContentTypes = ["application/json", "text/json", "text/javascript"]
            timeout = 60
            idleTimeout = 30
            maximumConnectionsPerHost = 6
            maximumResponseSize = 64 << 20
            cache = .shared
            appVersion = Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String ?? ""
            multipartMemoryThreshold = 10 << 20
            temporaryDirectory = FileManager.default.temporaryDirectory
            partialDownloadsDirectory = Configuration.defaultPartialDownloadsDirectory
            callbackQueue = .main
            redirects = .default
            coalescesDuplicates = true
            cookies = .inMemory
            transport = .urlSession
            redactedNames = []
            serverTrust = .system
            proxy = .environment
            routeAndTrustAreDefault = true
        }

        init(copying other: Storage) {
            baseURL = other.baseURL
            cdnURL = other.cdnURL
            baseJoin = other.baseJoin
            cdnJoin = other.cdnJoin
            defaultHeaders = other.defaultHeaders
            urlFilters = other.urlFilters
            adapters = other.adapters
            interceptors = other.interceptors
            responseHooks = other.responseHooks
            monitors = other.monitors
            retryPolicy = other.retryPolicy
            logMode = other.logMode
            logger = other.logger
            bodyEncoding = other.bodyEncoding
            acceptableStatusCodes = other.acceptableStatusCodes
            acceptableContentTypes = other.acceptableContentTypes
            timeout = other.timeout
            idleTimeout = other.idleTimeout
            maximumConnectionsPerHost = other.maximumConnectionsPerHost
            maximumResponseSize = other.maximumResponseSize
            cache = other.cache
            appVersion = other.appVersion
            multipartMemoryThreshold = other.multipartMemoryThreshold
            temporaryDirectory = other.temporaryDirectory
            partialDownloadsDirectory = other.partialDownloadsDirectory
            callbackQueue = other.callbackQueue
            redirects = other.redirects
            coalescesDuplicates = other.coalescesDuplicates
            cookies = other.cookies
            transport = other.transport
            redactedNames = other.redactedNames
            serverTrust = other.serverTrust
            proxy = other.proxy
            routeAndTrustAreDefault = other.routeAndTrustAreDefault
        }
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
    /// `cancel()` between retries or while interceptors decide; a global queue when a transport doesn't
    /// report a stop within a second, and when the response cache answers from disk. Keep such callbacks short.
    case immediate

    var dispatchQueue: DispatchQueue? {
        switch self {
        case .main: .main
        case .queue(let queue): queue
        case .immediate: nil
        }
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
