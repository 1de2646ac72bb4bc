/// Something that happened to one send of a request of type `R`, with the send it belongs to.
///
/// Every send produces `started`, then (if the request ``Request/reportsProgress``) `progress` events,
/// then exactly one terminal event: `succeeded`, `failed` or `cancelled`. A request whose
/// ``CachePolicy`` is ``CachePolicy/Mode/cachedThenLoad`` gets `cached` with the stored response first,
/// when there is one. An observer receives one
/// send's events in this order. ``sendID`` tells two concurrent sends of one type apart: it is the
/// ``RequestHandle/id`` of the send, and ``Response/sendID`` of its response.
///
/// ```swift
/// func userInfoChanged(_ event: RequestEvent<GetUserInfo>) {
///     switch event.kind {
///     case .started: showSpinner(for: event.sendID)
///     case .succeeded(let response): show(response.json["user"])
///     case .failed(_, let error): show(error, afterAttempts: event.attempts)
///     case .cancelled, .progress, .cached: break
///     }
/// }
/// ```
public struct RequestEvent<R: Request>: Sendable {
    /// What happened.
    public enum Kind: Sendable {
        /// The request was handed to the pipeline (it is built and sent next).
        case started(R)
        /// Bytes moved.
        case progress(R, TransferProgress)
        /// A stored response, shown while the network is asked (``CachePolicy/Mode/cachedThenLoad``,
        /// "cached, then fresh"): after `started`, never the last event of a send; a terminal event
        /// follows with the network's answer.
        case cached(Response<R>)
        /// The request succeeded.
        case succeeded(Response<R>)
        /// The request failed.
        case failed(R, NetworkError)
        /// The request was cancelled before it finished.
        case cancelled(R)
    }

    /// What happened.
    public let kind: Kind
    /// The send this event belongs to: the same number as its ``RequestHandle/id``, unique within its
    /// dispatcher.
    public let sendID: UInt64
    /// The transfer attempts made so far: 0 for `started` and for a send that ended before its first
    /// transfer (a request that could not be built, an early cancel); more than 1 after retries.
    public let attempts: Int

    /// Creates an event (for tests of your own observers).
    public init(_ kind: Kind, sendID: UInt64, attempts: Int = 0) {
        self.kind = kind
        self.sendID = sendID
        self.attempts = attempts
    }

    /// The request this event is about.
    public var request: R {
        switch kind {
        case .started(let request), .progress(let request, _), .failed(let request, _), .cancelled(let request): request
        case .succeeded(let response), .cached(let response): response.request
        }
    }

    /// Whether this is the last event of its send.
    public var isTerminal: Bool {
        switch kind {
        case .started, .progress, .cached: false
        case .succeeded, .failed, .cancelled: true
        }
    }

    /// The response, for `succeeded`.
    public var response: Response<R>? {
        if case .succeeded(let response) = kind { return response }
        return nil
    }

    /// The error, for `failed` (and ``NetworkError/cancelled`` for `cancelled`).
    public var error: NetworkError? {
        switch kind {
        case .failed(_, let error): error
        case .cancelled: .cancelled
        default: nil
        }
    }

    /// The progress, for `progress`.
    public var progress: TransferProgress? {
        if case .progress(_, let progress) = kind { return progress }
        return nil
    }

    /// The terminal event for a finished send.
    init(request: R, result: Result<Response<R>, NetworkError>, sendID: UInt64, attempts: Int) {
        let kind: Kind
        switch result {
        case .success(let response): kind = .succeeded(response)
        case .failure(.cancelled): kind = .cancelled(request)
        case .failure(let error): kind = .failed(request, error)
        }
        self.init(kind, sendID: sendID, attempts: attempts)
    }
}
