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
/// The phase lives in a lock; whoever moves it to `finished` first (the last attempt's completion, a
/// cancel, a build failure) delivers the terminal event, so there is exactly one, whatever the retries.
final class RequestOperation<R: Request>: InFlightOperation {
    private enum Phase {
        case pending
        /// An attempt is on the network (`task`), or waiting to retry (`nil`).
        case running((any TransportTask)?)
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
            let validated = result.flatMap { ResponseValidator.validate($0, for: request, configuration: configuration) }
            if case .failure(let error) = validated, let delay = retryDelay(after: number, error: error) {
                retry(number + 1, urlRequest, on: transport, after: delay, because: error)
            } else {
                finish(validated, attempts: number)
            }
        }
        let attached = phase.withLock { phase -> Bool in
            switch phase {
            case .pending, .running: phase = .running(task)
            case .finished: return false
            }
            return true
        }
        // Cancelled (or finished) before the task was attached: stop the transfer; a transport ignores
        // `cancel()` on a transfer that already completed.
        if !attached { task.cancel() }
    }

    private func retryDelay(after attempt: Int, error: NetworkError) -> TimeInterval? {
        (request.retryPolicy ?? configuration.retryPolicy).delay(afterAttempt: attempt, error: error, method: request.method)
    }

    private func retry(_ number: Int, _ urlRequest: URLRequest, on transport: any Transport, after delay: TimeInterval, because error: NetworkError) {
        let waiting = phase.withLock { phase -> Bool in
            guard case .running = phase else { return false }
            phase = .running(nil)
            return true
        }
        guard waiting else { return }
        log?.retrying(attempt: number, after: delay, because: error)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
            guard !isFinished else { return }
            attempt(number, urlRequest, on: transport)
        }
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

    private func finish(_ result: Result<Response<R>, NetworkError>, attempts: Int) {
        let first = phase.withLock { phase -> Bool in
            if case .finished = phase { return false }
            phase = .finished
            return true
        }
        guard first else { return }
        var final = applyHooks(to: result)
        if case .success(var response) = final {
            response.attempts = attempts
            final = .success(response)
        }
        deliver(final)
    }

    /// Runs the response hooks (configuration's, then the request's) on the final result.
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
        registry.post(RequestEvent(request: request, result: result))
        if let completion {
            completionQueue.run { completion(result) }
        }
        if !accessories.isEmpty {
            callbackQueue.run { [accessories, request] in
                for accessory in accessories { accessory.didStop(request, error: error) }
            }
        }
    }
}

extension Result {
    /// The error, or `nil` on success.
    package var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
