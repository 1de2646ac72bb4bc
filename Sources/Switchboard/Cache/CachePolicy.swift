import Foundation

/// How a request uses the response cache (``Configuration/cache``): YTKNetwork's
/// `cacheTimeInSeconds`, `cacheVersion` and `cacheSensitiveData`, with modes it didn't have.
///
/// ```swift
/// struct GetUserInfo: Request {
///     let id: String
///     var path: String { "/users/\(id)" }
///     var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 300, mode: .cachedThenLoad, sensitiveData: session.userID) }
/// }
/// ```
public struct CachePolicy: Sendable {
    /// What the cache does for a send.
    public enum Mode: Sendable, Hashable {
        /// A fresh stored response answers without the network; otherwise the network answers
        /// (a stale entry with a validator is revalidated: a `304` answers with the stored body).
        case cacheElseLoad
        /// A stored response (fresh or stale) is delivered first as a ``RequestEvent/Kind/cached(_:)``
        /// event, then the network's answer as the terminal event.
        case cachedThenLoad
        /// The network answers; when it fails (no connection, a timeout), a stored response answers
        /// instead, with ``Response/Source/stale``.
        case networkElseCache
    }

    /// How long a stored response stays fresh, in seconds.
    public var timeToLive: TimeInterval
    /// What the cache does.
    public var mode: Mode
    /// A version of the response's format: entries stored with another version are not used.
    public var version: Int
    /// Data the response depends on beyond the request, such as the signed-in user's id: entries
    /// stored with other data are not used (and the key includes it).
    public var sensitiveData: String?
    /// Skip reading the cache (still store the network's answer): YTKNetwork's `ignoreCache`.
    public var ignoresCache: Bool
    /// Names of query or form parameters left out of the key (a timestamp, a nonce).
    public var volatileParameters: Set<String>
    /// Whether a request carrying credentials may be served from and stored in the cache: an
    /// `Authorization` or `Proxy-Authorization` header (however it got there: adapters and interceptors
    /// run before the cache is read), a `Cookie` of its own or from the dispatcher's jar, user info in
    /// its URL, or ``Request/credentials``. When `true`, the entry is keyed by a SHA-256 of those values,
    /// so one user's entry never answers another's request. Default: `false`.
    public var cachesAuthenticatedRequests: Bool

    /// Creates a policy.
    public init(
        timeToLive: TimeInterval, mode: Mode = .cacheElseLoad, version: Int = 0, sensitiveData: String? = nil,
        ignoresCache: Bool = false, volatileParameters: Set<String> = [], cachesAuthenticatedRequests: Bool = false
    ) {
        self.timeToLive = timeToLive
        self.mode = mode
        self.version = version
        self.sensitiveData = sensitiveData
        self.ignoresCache = ignoresCache
        self.volatileParameters = volatileParameters
        self.cachesAuthenticatedRequests = cachesAuthenticatedRequests
    }
}
