import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Moves one `URLRequest` over the network and reports the body. ``URLSessionTransport`` is the
/// default; `SwitchboardTesting` has a stub for tests of app code.
///
/// A transport must call `completion` exactly once per `perform`, and must stop calling `progress`
/// before it does.
public protocol Transport: Sendable {
    /// Starts a transfer.
    /// - Parameters:
    ///   - request: the request, fully built.
    ///   - options: deadline, priority, credentials and limits for this transfer.
    ///   - progress: called as bytes move, on the transport's queue.
    ///   - completion: called once with the response and whole body, or the error, on the transport's queue.
    /// - Returns: a handle that cancels the transfer.
    func perform(
        _ request: URLRequest,
        options: TransferOptions,
        progress: (@Sendable (TransferProgress) -> Void)?,
        completion: @escaping @Sendable (Result<TransportResponse, NetworkError>) -> Void
    ) -> any TransportTask
}

/// A transfer in flight.
public protocol TransportTask: Sendable {
    /// Cancels the transfer; its completion reports ``NetworkError/cancelled`` unless it already finished.
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

    /// Creates options.
    public init(timeout: TimeInterval, priority: Float = 0.5, credentials: Credentials? = nil, maximumResponseSize: Int = 64 << 20, redirects: RedirectRules = .default) {
        self.timeout = timeout
        self.priority = priority
        self.credentials = credentials
        self.maximumResponseSize = maximumResponseSize
        self.redirects = redirects
    }
}

/// What a transport got back: the response head and the whole body.
public struct TransportResponse: Sendable {
    /// The HTTP response head.
    public let httpResponse: HTTPURLResponse
    /// The body.
    public let data: Data
    /// When the transfer ran.
    public let timing: Timing

    /// Creates a transport response.
    public init(httpResponse: HTTPURLResponse, data: Data, timing: Timing) {
        self.httpResponse = httpResponse
        self.data = data
        self.timing = timing
    }
}
