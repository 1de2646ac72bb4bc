import Foundation

/// An event of any request type: what the bus of all requests carries
/// (``Dispatcher/allEvents(bufferingPolicy:replayingLast:)``, ``Dispatcher/addObserverForAllRequests(on:handler:)``).
/// Read what every event has here, or get the typed event with ``typed(_:)``.
///
/// ```swift
/// for await event in Dispatcher.shared.allEvents() {
///     print(event.requestTypeName, event.sendID, event.kind)
///     if let user = event.typed(GetUserInfo.self)?.response { … }
/// }
/// ```
public struct AnyRequestEvent: Sendable, CustomStringConvertible {
    /// What happened, without the request type.
    public enum Kind: Sendable {
        /// The request was handed to the pipeline.
        case started
        /// Bytes moved.
        case progress(TransferProgress)
        /// A stored response is shown while the network is asked.
        case cached(any AnyResponse)
        /// The request succeeded.
        case succeeded(any AnyResponse)
        /// The request failed.
        case failed(NetworkError)
        /// The request was cancelled.
        case cancelled
    }

    /// What happened.
    public let kind: Kind
    /// The send this event belongs to (its ``RequestHandle/id``).
    public let sendID: UInt64
    /// The transfer attempts made so far.
    public let attempts: Int
    /// The request.
    public let request: any Request
    /// The typed event.
    private let base: any Sendable

    /// Wraps a typed event.
    public init<R: Request>(_ event: RequestEvent<R>) {
        base = event
        sendID = event.sendID
        attempts = event.attempts
        request = event.request
        switch event.kind {
        case .started: kind = .started
        case .progress(_, let progress): kind = .progress(progress)
        case .cached(let response): kind = .cached(response)
        case .succeeded(let response): kind = .succeeded(response)
        case .failed(_, let error): kind = .failed(error)
        case .cancelled: kind = .cancelled
        }
    }

    /// The event as an event of `R`, or `nil` when it belongs to another request type.
    public func typed<R: Request>(_ type: R.Type = R.self) -> RequestEvent<R>? { base as? RequestEvent<R> }

    /// The request's type.
    public var requestType: any Request.Type { type(of: request) }

    /// The request type's name, as `String(describing:)` gives it (`GetUserInfo`).
    public var requestTypeName: String { String(describing: type(of: request)) }

    /// Whether this is the last event of its send.
    public var isTerminal: Bool {
        switch kind {
        case .started, .progress, .cached: false
        case .succeeded, .failed, .cancelled: true
        }
    }

    /// The response, for `succeeded`.
    public var response: (any AnyResponse)? {
        if case .succeeded(let response) = kind { return response }
        return nil
    }

    /// The error, for `failed` (and ``NetworkError/cancelled`` for `cancelled`).
    public var error: NetworkError? {
        switch kind {
        case .failed(let error): error
        case .cancelled: .cancelled
        default: nil
        }
    }

    /// One line: the type, the send and what happened (`GetUserInfo #3 succeeded 200`).
    public var description: String {
        let what: String
        switch kind {
        case .started: what = "started"
        case .progress(let progress): what = "progress \(progress.bytesSent)↑ \(progress.bytesReceived)↓"
        case .cached(let response): what = "cached \(response.statusCode)"
        case .succeeded(let response): what = "succeeded \(response.statusCode)"
        case .failed(let error): what = "failed: \(error)"
        case .cancelled: what = "cancelled"
        }
        return "\(requestTypeName) #\(sendID) \(what)"
    }
}
