import Dispatch
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
/// The phase lives in a lock; whoever moves it to `finished` first delivers the terminal event, so there
/// is exactly one, whatever the retries. While a transfer runs, a cancel only asks the transport to stop:
/// the transport's completion (which comes after its last progress callback, on the same queue) then
/// delivers `cancelled`, so no progress event can follow the terminal event.
final class RequestOperation<R: Request>: InFlightOperation {
    private enum Phase {
        case pending
        /// `transport.perform` for this attempt is being called.
        case starting(attempt: Int)
        /// This attempt's transfer runs.
        case running(attempt: Int, task: any TransportTask)
        /// Waiting to retry.
        case waiting
        /// Cancel was asked during a transfer; its completion delivers `cancelled`.
        case cancelling
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
    private let accessories: [any RequestAccessory]
    /// `nil` when logging is off, so a send without logging allocates nothing for it.
    private let log: RequestLog?

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
        accessories = configuration.accessories + request.accessories
        log = configuration.logMode == .off ? nil : RequestLog(id: id, mode: configuration.logMode, logger: configuration.logger)
    }

    var isFinished: Bool {
        phase.withLock { if case .finished = $0 { true } else { false } }
    }

    /// Builds the URLRequest and hands it to `transport`.
    func start(on transport: any Transport) {
        for accessory in accessories { accessory.willStart(request) }
        registry.post(RequestEvent<R>.started(request))
        let urlRequest: URLRequest
        do {
            urlRequest = try RequestBuilder.build(request, configuration: configuration)
        } catch {
            finish(.failure(error), attempts: 1)
            return
        }
        log?.started(urlRequest)
        attempt(1, urlRequest, on: transport)
    }

    private func attempt(_ number: Int, _ urlRequest: URLRequest, on transport: any Transport) {
        let proceed = phase.withLock { phase -> Bool in
            switch phase {
            case .pending, .waiting: phase = .starting(attempt: number)
            default: return false  // cancelled (maybe by an observer of `started`) or finished
            }
            return true
        }
        guard proceed else { return }
        let options = TransferOptions(
            timeout: request.timeout ?? configuration.timeout,
            priority: request.priority.taskPriority,
            credentials: request.credentials,
            maximumResponseSize: configuration.maximumResponseSize
        )
        let progress: (@Sendable (TransferProgress) -> Void)?
        if request.reportsProgress {
            progress = { [weak self, registry, request] value in
                guard let self, self.isTransferring else { return }
                registry.post(RequestEvent<R>.progress(request, value))
            }
        } else {
            progress = nil
        }
        let task = transport.perform(urlRequest, options: options, progress: progress) { [self] result in
            transferEnded(result, attempt: number, urlRequest, on: transport)
        }
        let cancelNow = phase.withLock { phase -> Bool in
            switch phase {
            case .starting(let attempt) where attempt == number:
                phase = .running(attempt: number, task: task)
                return false
            case .cancelling:
                return true  // cancel came while `perform` ran; the completion delivers `cancelled`
            default:
                return false  // the transfer already ended (a transport that completes at once)
            }
        }
        if cancelNow { task.cancel() }
    }

    /// Whether a transfer runs and no cancel was asked (progress is posted only then).
    private var isTransferring: Bool {
        phase.withLock { phase in
            switch phase {
            case .starting, .running: true
            default: false
            }
        }
    }

    /// The transport's completion of attempt `number`: retry, or finish.
    private func transferEnded(_ result: Result<TransportResponse, NetworkError>, attempt number: Int, _ urlRequest: URLRequest, on transport: any Transport) {
        let validated = result.flatMap { ResponseValidator.validate($0, for: request, configuration: configuration) }
        let delay: TimeInterval? = validated.failure.flatMap { retryDelay(after: number, error: $0) }
        let next = phase.withLock { phase -> TransferOutcome in
            switch phase {
            case .finished: return .ignore
            case .cancelling: return .cancelled
            default:
                guard let delay else { return .finish }
                phase = .waiting
                return .retry(delay)
            }
        }
        switch next {
        case .ignore:
            return
        case .cancelled:
            finish(.failure(.cancelled), attempts: number)
        case .finish:
            finish(validated, attempts: number)
        case .retry(let delay):
            if let error = validated.failure { log?.retrying(attempt: number + 1, after: delay, because: error) }
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                attempt(number + 1, urlRequest, on: transport)
            }
        }
    }

    private func retryDelay(after attempt: Int, error: NetworkError) -> TimeInterval? {
        (request.retryPolicy ?? configuration.retryPolicy).delay(afterAttempt: attempt, error: error, method: request.method)
    }

    /// Cancels the send. Before the transfer starts or while waiting to retry, `cancelled` is delivered
    /// at once, on this thread; during a transfer the transport is stopped and its completion delivers
    /// `cancelled`, on the transport's queue. Nothing happens if the send already finished.
    func cancel() {
        let action = phase.withLock { phase -> CancelAction in
            switch phase {
            case .finished, .cancelling:
                return .none
            case .pending, .waiting:
                phase = .finished
                return .deliver
            case .starting:
                phase = .cancelling
                return .none
            case .running(_, let task):
                phase = .cancelling
                return .cancelTask(task)
            }
        }
        switch action {
        case .none: break
        case .deliver: deliver(.failure(.cancelled))
        case .cancelTask(let task): task.cancel()
        }
    }

    private func finish(_ result: Result<Response<R>, NetworkError>, attempts: Int) {
        let first = phase.withLock { phase -> Bool in
            if case .finished = phase { return false }
            phase = .finished
            return true
        }
        guard first else { return }
        var final = result.failure?.isCancelled == true ? result : applyHooks(to: result)
        if case .success(var response) = final {
            response.attempts = attempts
            final = .success(response)
        }
        deliver(final)
    }

    private func applyHooks(to result: Result<Response<R>, NetworkError>) -> Result<Response<R>, NetworkError> {
        let hooks = (request.usesConfigurationResponseHooks ? configuration.responseHooks : []) + request.responseHooks
        guard !hooks.isEmpty else { return result }
        var outcome = result
        if case .success(let response) = outcome {
            let context = ResponseContext(request: request, httpResponse: response.httpResponse, data: response.data, json: response.json)
            do {
                for hook in hooks { try hook.didSucceed(context) }
            } catch {
                outcome = .failure(error)
            }
        }
        if case .failure(var error) = outcome {
            for hook in hooks { error = hook.didFail(error, for: request) }
            outcome = .failure(error)
        }
        return outcome
    }

    /// The one terminal event: willStop → observers, then the call's own closure → didStop.
    private func deliver(_ result: Result<Response<R>, NetworkError>) {
        onFinish(id)
        log?.finished(result)
        let error = result.failure
        let callbackQueue = configuration.callbackQueue
        if !accessories.isEmpty {
            callbackQueue.run { [accessories, request] in
                for accessory in accessories { accessory.willStop(request, error: error) }
            }
        }
        let event = RequestEvent(request: request, result: result)
        if let completion {
            registry.post(event, then: completionQueue) { completion(result) }
        } else {
            registry.post(event)
        }
        if !accessories.isEmpty {
            callbackQueue.run { [accessories, request] in
                for accessory in accessories { accessory.didStop(request, error: error) }
            }
        }
    }
}

/// What to do after a transfer ended.
private enum TransferOutcome {
    case ignore, cancelled, retry(TimeInterval), finish
}

/// What a cancel does once the phase is updated.
private enum CancelAction {
    case none, deliver, cancelTask(any TransportTask)
}

extension Result {
    /// The error, or `nil` on success.
    package var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
