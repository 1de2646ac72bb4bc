/// Something that happened to one send of a request of type `R`.
///
/// Every send produces `started`, then (if the request ``Request/reportsProgress``) `progress` events,
/// then exactly one terminal event: `succeeded`, `failed` or `cancelled`. An observer receives one
/// send's events in this order.
public enum RequestEvent<R: Request>: Sendable {
    /// The request was handed to the transport (or is about to be answered from a cache).
    case started(R)
    /// Bytes moved.
    case progress(R, TransferProgress)
    /// The request succeeded.
    case succeeded(Response<R>)
    /// The request failed.
    case failed(R, NetworkError)
    /// The request was cancelled before it finished.
    case cancelled(R)

    /// The request this event is about.
    public var request: R {
        switch self {
        case .started(let request), .progress(let request, _), .failed(let request, _), .cancelled(let request): request
        case .succeeded(let response): response.request
        }
    }

    /// Whether this is the last event of its send.
    public var isTerminal: Bool {
        switch self {
        case .started, .progress: false
        case .succeeded, .failed, .cancelled: true
        }
    }

    /// The response, for `succeeded`.
    public var response: Response<R>? {
        if case .succeeded(let response) = self { return response }
        return nil
    }

    /// The error, for `failed` (and ``NetworkError/cancelled`` for `cancelled`).
    public var error: NetworkError? {
        switch self {
        case .failed(_, let error): error
        case .cancelled: .cancelled
        default: nil
        }
    }

    /// The terminal event for a finished send.
    init(request: R, result: Result<Response<R>, NetworkError>) {
        switch result {
        case .success(let response): self = .succeeded(response)
        case .failure(.cancelled): self = .cancelled(request)
        case .failure(let error): self = .failed(request, error)
        }
    }
}
