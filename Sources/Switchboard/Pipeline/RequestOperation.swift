import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a dispatcher needs of any in-flight send, whatever its request type.
protocol InFlightOperation: AnyObject, Sendable {
    var id: UInt64 { get }
    var isFinished: Bool { get }
    func cancel()
}

/// One send of one request, from build to its single terminal event.
///
/// The phase lives in a lock; whoever moves it to `finished` first (the transport's completion, a
/// cancel, a build failure) delivers the terminal event, so there is exactly one.
final class RequestOperation<R: Request>: InFlightOperation {
    private enum Phase {
        case pending
        case running(any TransportTask)
        case finished
    }

    let id: UInt64
    let request: R
    let configuration: Configuration
    private let registry: ObserverRegistry
    private let completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    private let completionQueue: CallbackQueue
    private let onFinish: @Sendable (UInt64) -> Void
    private let phase = Locked(Phase.pending)

    init(
        id: UInt64,
        request: R,
        configuration: Configuration,
        registry: ObserverRegistry,
        completionQueue: CallbackQueue,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?,
        onFinish: @escaping @Sendable (UInt64) -> Void
    ) {
        self.id = id
        self.request = request
        self.configuration = configuration
        self.registry = registry
        self.completionQueue = completionQueue
        self.completion = completion
        self.onFinish = onFinish
    }

    var isFinished: Bool {
        phase.withLock { if case .finished = $0 { true } else { false } }
    }

    /// Builds the URLRequest and hands it to `transport`.
    func start(on transport: any Transport) {
        registry.post(RequestEvent<R>.started(request))
        let urlRequest: URLRequest
        do {
            urlRequest = try RequestBuilder.build(request, configuration: configuration)
        } catch {
            finish(.failure(error))
            return
        }
        let options = TransferOptions(
            timeout: request.timeout ?? configuration.timeout,
            priority: request.priority.taskPriority,
            credentials: request.credentials,
            maximumResponseSize: configuration.maximumResponseSize
        )
        let progress: (@Sendable (TransferProgress) -> Void)?
        if request.reportsProgress {
            progress = { [weak self, registry, request] value in
                guard let self, !self.isFinished else { return }
                registry.post(RequestEvent<R>.progress(request, value))
            }
        } else {
            progress = nil
        }
        let task = transport.perform(urlRequest, options: options, progress: progress) { [self] result in
            switch result {
            case .success(let response):
                finish(ResponseValidator.validate(response, for: request, configuration: configuration))
            case .failure(let error):
                finish(.failure(error))
            }
        }
        let attached = phase.withLock { phase -> Bool in
            guard case .pending = phase else { return false }
            phase = .running(task)
            return true
        }
        // Cancelled (or finished) before the task was attached: stop the transfer; a transport ignores
        // `cancel()` on a transfer that already completed.
        if !attached { task.cancel() }
    }

    /// Cancels the send: the transfer stops and observers get `cancelled`, unless it already finished.
    func cancel() {
        var task: (any TransportTask)?
        let cancelled = phase.withLock { phase -> Bool in
            switch phase {
            case .finished: return false
            case .running(let running): task = running
            case .pending: break
            }
            phase = .finished
            return true
        }
        guard cancelled else { return }
        task?.cancel()
        deliver(.failure(.cancelled))
    }

    private func finish(_ result: Result<Response<R>, NetworkError>) {
        let first = phase.withLock { phase -> Bool in
            if case .finished = phase { return false }
            phase = .finished
            return true
        }
        if first { deliver(result) }
    }

    /// The one terminal event: observers first, then the call's own closure.
    private func deliver(_ result: Result<Response<R>, NetworkError>) {
        onFinish(id)
        registry.post(RequestEvent(request: request, result: result))
        if let completion {
            completionQueue.run { completion(result) }
        }
    }
}
