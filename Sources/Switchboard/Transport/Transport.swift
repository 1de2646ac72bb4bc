import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Moves one request over the network: its body from memory, a file or a stream, its response body
/// into memory or a file. ``URLSessionTransport`` is the default; `SwitchboardTesting` has a stub for
/// tests of app code, and ``Configuration/transport`` picks the one a ``Dispatcher`` uses.
///
/// A transport moves bytes and leaves the decisions to ``TransferRules``, which it creates from the
/// options: redirects, challenges and size limits then behave the same whatever the transport (the
/// package's conformance suite checks each rule against each transport it has).
///
/// The contract:
/// - `callbacks.completion` is called exactly once per `perform`, and is the last callback;
/// - `callbacks.head` is called once per final response, before any of its body is reported, and its
///   decision is followed;
/// - callbacks are called one at a time, never from inside `perform` or `cancel()`;
/// - after ``TransportTask/cancel()`` the completion reports ``NetworkError/cancelled`` unless the
///   transfer already ended.
public protocol Transport: Sendable {
    /// Starts a transfer.
    /// - Parameters:
    ///   - request: the request, fully built, with its body and the response's destination.
    ///   - options: deadline, priority, credentials, limits and redirect rules for this transfer.
    ///   - callbacks: the head, progress and completion, called on the transport's queue.
    /// - Returns: a handle that cancels the transfer.
    func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask

    /// Which cookies the transport adds to the requests it sends: the response cache counts them as
    /// credentials. Default: ``TransportCookies/unknown`` (the cache is then not used for its requests).
    var addedCookies: TransportCookies { get }

    /// Whether the transport applies `serverTrust` and `proxy` (a dispatcher's
    /// ``Configuration/serverTrust`` and ``Configuration/proxy``) to what it sends. A dispatcher sends
    /// nothing through a transport that doesn't: the send fails with
    /// ``NetworkError/unsupportedTrustPolicy(reason:)`` or ``NetworkError/proxyFailed(reason:)``.
    /// Default: only the defaults (the system's trust, the environment's proxy).
    func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool
}

extension Transport {
    /// The defaults only: ``ServerTrust/system`` and ``ProxySetting/environment``. A transport that
    /// applies other settings says so.
    public func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool {
        serverTrust.isSystemDefault && proxy == .environment
    }
}

extension Transport {
    /// Starts a transfer of a `URLRequest` (its `httpBody` is the body) with the response body in memory.
    /// - Parameters:
    ///   - request: the request, fully built.
    ///   - options: deadline, priority, credentials, limits and redirect rules for this transfer.
    ///   - progress: called as bytes move, on the transport's queue.
    ///   - completion: called once with the response and whole body, or the error, on the transport's queue.
    public func perform(
        _ request: URLRequest,
        options: TransferOptions,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: @escaping @Sendable (Result<TransportResponse, NetworkError>) -> Void
    ) -> any TransportTask {
        perform(TransportRequest(request), options: options, callbacks: TransferCallbacks(progress: progress, completion: completion))
    }
}

/// A transfer in flight.
public protocol TransportTask: Sendable {
    /// Cancels the transfer; its completion reports ``NetworkError/cancelled`` unless it already finished.
    /// Called from any thread, the dispatcher's deadline queue included: it must not block.
    func cancel()
}

/// Per-transfer settings.
public struct TransferOptions: Sendable {
    /// The attempt's deadline in seconds, for information: a ``Dispatcher`` enforces it above the
    /// transport (it cancels the transfer when it passes), so a transport need not. ``URLSessionTransport``
    /// used on its own keeps no deadline but its idle timeout.
    public var timeout: TimeInterval
    /// `URLSessionTask.priority`, 0…1.
    public var priority: Float
    /// Credentials for a Basic challenge, used at most once.
    public var credentials: Credentials?
    /// The largest body accepted.
    public var maximumResponseSize: Int
    /// Which redirects to follow.
    public var redirects: RedirectRules
    /// The longest wait for the next byte before the transfer fails with
    /// ``NetworkError/idleTimeout(after:)``; `nil` leaves it to the transport: the request's own
    /// `timeoutInterval` when it isn't `URLRequest`'s default of 60 s, else the transport's
    /// configuration's. 0, a negative number, NaN or infinity means none. A ``Dispatcher`` sets it for
    /// every send: the request's ``Request/idleTimeout``, else a custom `URLRequest`'s own
    /// `timeoutInterval` when it isn't 60 s, else ``Configuration/idleTimeout``.
    public var idleTimeout: TimeInterval?

    /// Creates options.
    public init(
        timeout: TimeInterval,
        priority: Float = 0.5,
        credentials: Credentials? = nil,
        maximumResponseSize: Int = 64 << 20,
        redirects: RedirectRules = .default,
        idleTimeout: TimeInterval? = nil
    ) {
        self.timeout = timeout
        self.priority = priority
        self.credentials = credentials
        self.maximumResponseSize = maximumResponseSize
        self.redirects = redirects
        self.idleTimeout = idleTimeout
    }
}

/// What a transport got back: the response head and the body, in memory or in a file.
public struct TransportResponse: Sendable {
    /// The HTTP response head.
    public var httpResponse: HTTPURLResponse { head.response }
    /// The head, made into an `HTTPURLResponse` only when asked (see ``ResponseHead``).
    let head: ResponseHead
    /// The protocol that carried the response: `HTTP/1.1` or `HTTP/2` on the libcurl transport (as the
    /// status line said); `nil` on the URLSession transport, whose `HTTPURLResponse` doesn't say.
    public var httpVersion: String? { head.httpVersion }
    /// The body, for a ``ResponseDestination/memory`` destination; empty for a file.
    public let data: Data
    /// The file the body was written to, for a ``ResponseDestination/file(_:offset:)`` destination.
    public let fileURL: URL?
    /// The body bytes this response delivered (to memory or to the file, after its offset).
    public let bodyLength: Int64
    /// When the transfer ran.
    public let timing: Timing

    /// Creates a response whose body is in memory.
    public init(httpResponse: HTTPURLResponse, data: Data, timing: Timing) {
        self.init(head: ResponseHead(httpResponse), data: data, timing: timing)
    }

    /// Creates a response whose body is in memory, from a head the transport parsed.
    init(head: ResponseHead, data: Data, timing: Timing) {
        self.head = head
        self.data = data
        fileURL = nil
        bodyLength = Int64(data.count)
        self.timing = timing
    }

    /// Creates a response whose body was written to a file.
    public init(httpResponse: HTTPURLResponse, fileURL: URL, bodyLength: Int64, timing: Timing) {
        self.init(head: ResponseHead(httpResponse), fileURL: fileURL, bodyLength: bodyLength, timing: timing)
    }

    /// Creates a response whose body was written to a file, from a head the transport parsed.
    init(head: ResponseHead, fileURL: URL, bodyLength: Int64, timing: Timing) {
        self.head = head
        data = Data()
        self.fileURL = fileURL
        self.bodyLength = bodyLength
        self.timing = timing
    }
}
