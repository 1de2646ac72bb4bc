import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 11 — deliver the one terminal event: the response hooks map a failure
/// (``ResponseHook/didFail(_:for:)``); monitors hear `didFinish`, then `requestWillDeliver` on the
/// callback queue; the observers get the event (``ObserverRegistry/post(_:_:)``: the type's delivery
/// groups snapshotted under the registry's lock, each queue's observers in one block, nothing made when
/// nobody listens; the bus of all requests too while it has listeners); then the send's own closure
/// (last in the last block on its queue: the bus's there, else the type's observers' there) or
/// `response(for:)`'s continuation; then
/// `requestDidDeliver`. The send leaves the dispatcher's in-flight table before its caller resumes.
struct Delivery<R: Request>: Sendable {
    let registry: ObserverRegistry
    let completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    /// Where the send's closure runs.
    let completionQueue: CallbackQueue
    /// Where monitors hear `requestWillDeliver` and `requestDidDeliver`.
    let callbackQueue: CallbackQueue
    let onFinish: @Sendable (UInt64) -> Void
    /// Bound again around the send's closure, so that what it sends is inside the same refreshes.
    let refreshScope: RefreshScope

    /// `outcome` with each hook's mapping of a failure.
    private static func mapped(_ outcome: Outcome, of request: R, _ hooks: [any ResponseHook]) -> Outcome {
        guard !hooks.isEmpty, case .failure(var error) = outcome, !error.isCancelled else { return outcome }
        for hook in hooks { error = hook.didFail(error, for: request) }
        return .failure(error)
    }

    /// Delivers `delivered`, its failure mapped by `hooks`, to monitors, observers and the send's closure
    /// or `continuation`.
    /// `operation` is handed to the thread sanitizer with the continuation (see ``SanitizerHandOff``).
    func run(
        _ delivered: Outcome, of request: R, id: UInt64, attempts: Int, hooks: [any ResponseHook], monitors: Monitors,
        continuation: UnsafeContinuation<Result<Response<R>, NetworkError>, Never>?, operation: AnyObject
    ) {
        let outcome = Self.mapped(delivered, of: request, hooks)
        let error = outcome.failure
        if !monitors.isEmpty {
            let finished = outcome.map { ResponseContext(request: request, parts: $0) }
            monitors.each { $0.request($1, didFinish: finished) }
            callbackQueue.run { monitors.each { $0.requestWillDeliver($1, error: error) } }
        }
        let result: Result<Response<R>, NetworkError>
        switch outcome {
        case .success(let parts): result = .success(Response(request: request, parts: parts, attempts: attempts, sendID: id))
        case .failure(let error): result = .failure(error)
        }
        func event() -> RequestEvent<R> { RequestEvent(request: request, result: result, sendID: id, attempts: attempts) }
        if let completion, completionQueue.dispatchQueue != nil {
            // It leaves the in-flight table before its completion can run (on another thread, maybe at once).
            onFinish(id)
            // Observers first, then the completion, on its queue (in their block when they share it).
            registry.post(R.self, then: completionQueue, event) { [refreshScope] in refreshScope.run { completion(result) } }
        } else {
            // The event is made only if something observes it; the completion (or the continuation)
            // runs here, after the `.immediate` observers.
            registry.post(R.self, event)
            // It leaves the count after its `.immediate` observers ran, before its caller resumes.
            onFinish(id)
            if let continuation {
                SanitizerHandOff.release(operation)
                continuation.resume(returning: result)
            } else if let completion {
                refreshScope.run { completion(result) }
            }
        }
        if !monitors.isEmpty {
            callbackQueue.run { monitors.each { $0.requestDidDeliver($1, error: error) } }
        }
    }
}
