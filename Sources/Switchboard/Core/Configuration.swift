import Foundation

/// Settings shared by every request a ``Switchboard`` sends: the Swift form of `YTKNetworkConfig`.
///
/// ```swift
/// Switchboard.shared.configuration.baseURL = URL(string: "https://api.example.com")
/// let client = Switchboard(configuration: Configuration {
///     $0.baseURL = URL(string: "https://api.example.com/v2")
///     $0.callbackQueue = .queue(myQueue)
/// })
/// ```
///
/// Transport settings (``maximumConnectionsPerHost``, ``idleTimeout``) are read when the dispatcher
/// creates its URLSession, at the first send; change them before that.
public struct Configuration: Sendable {
    /// The base URL relative paths are joined to (keeping its own path). Default: none.
    public var baseURL: URL?

    /// The base URL of requests with ``Request/useCDN``. Default: none.
    public var cdnURL: URL?

    /// Header fields sent with every request; a request's own ``Request/headers`` win. Default: none.
    public var defaultHeaders: HTTPHeaders = [:]

    /// URL filters every request's URL passes through, in order (see ``URLFilter``). Default: none.
    public var urlFilters: [any URLFilter] = []

    /// Adapters every `URLRequest` passes through, in order (see ``RequestAdapter``). Default: none.
    public var requestAdapters: [any RequestAdapter] = []

    /// Hooks every result passes through, in order (see ``ResponseHook``). Default: none.
    public var responseHooks: [any ResponseHook] = []

    /// Accessories of every request (see ``RequestAccessory``). Default: none.
    public var accessories: [any RequestAccessory] = []

    /// How failed requests are retried; a request's ``Request/retryPolicy`` wins. Default: `.none`.
    public var retryPolicy: RetryPolicy = .none

    /// How much is logged. Default: `.off`.
    public var logMode: LogMode = .off

    /// Where log lines go. Default: ``ConsoleLogger``.
    public var logger: any NetworkLogger = ConsoleLogger()

    /// Where parameters of `POST`, `PUT` and `PATCH` go when the request doesn't say. Default: `.form`.
    public var bodyEncoding: ParameterEncoding = .form

    /// Status codes that count as success. Default: 200..<300.
    public var acceptableStatusCodes: StatusCodes = .success

    /// Acceptable MIME types of JSON responses (any `+json` type is accepted when `application/json`
    /// is). Empty accepts any. Default: `application/json`, `text/json`, `text/javascript`.
    public var acceptableContentTypes: Set<String> = ["application/json", "text/json", "text/javascript"]

    /// The deadline of each attempt of a request in seconds, from its start to the last byte, enforced by
    /// Switchboard (URLSession's resource timeout is ignored on Linux). Default: 60.
    public var timeout: TimeInterval = 60

    /// The idle timeout in seconds: the longest wait for the next byte. Default: 30.
    public var idleTimeout: TimeInterval = 30

    /// The most connections the session opens to one host. Default: 6.
    public var maximumConnectionsPerHost: Int = 6

    /// The largest response body accepted, in bytes; a larger one fails with
    /// ``NetworkError/responseTooLarge(limit:)``. Default: 64 MiB.
    public var maximumResponseSize: Int = 64 << 20

    /// Where observers (registered without a queue) and completion closures are called. Default: `.main`.
    public var callbackQueue: CallbackQueue = .main

    /// Creates the default configuration.
    public init() {}

    /// Creates a configuration from the defaults, changed by `configure`.
    public init(_ configure: (inout Configuration) -> Void) {
        configure(&self)
    }
}

/// Where a callback runs.
public enum CallbackQueue: Sendable {
    /// The main queue (the main actor).
    case main
    /// A queue of yours. Use a serial queue so one observer sees one request's events in order.
    case queue(DispatchQueue)
    /// At once, on the thread that produced the event: Switchboard's serial transport queue for progress
    /// and most results; the thread that called `send` for `started` and for a request that could not be
    /// built; the thread that called `cancel()` for a send cancelled before its transfer started. Keep
    /// such callbacks short.
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
