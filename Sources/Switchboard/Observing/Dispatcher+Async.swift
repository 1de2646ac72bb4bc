/// Swift concurrency: awaiting one response (streams of events are in `Dispatcher+Streams.swift`).
extension Dispatcher {
    /// Sends `request` and waits for its result. Cancelling the calling task cancels the send; a task
    /// already cancelled sends nothing.
    ///
    /// ```swift
    /// let response = try await Dispatcher.shared.response(for: GetUserInfo(id: "123"))
    /// ```
    /// Observers of `R` get the send's events as with ``send(_:completion:)``.
    /// - Throws: ``NetworkError``; ``NetworkError/cancelled`` when the task was cancelled.
    public func response<R: Request>(for request: R) async throws(NetworkError) -> Response<R> {
        try await response(for: request, progress: nil)
    }

    /// Sends `request`, reports its progress, and waits for its result (an upload or a download).
    ///
    /// ```swift
    /// let response = try await Dispatcher.shared.response(for: Download("/big.bin", to: folder)) { progress in
    ///     print(progress.fractionReceived ?? 0)
    /// }
    /// ```
    /// - Parameters:
    ///   - request: the request.
    ///   - progress: called as bytes move, on the transport's queue (not the callback queue), never
    ///     after the result; the counts only grow.
    /// - Throws: ``NetworkError``; ``NetworkError/cancelled`` when the task was cancelled.
    public func response<R: Request>(for request: R, progress: (@Sendable (TransferProgress) -> Void)?) async throws(NetworkError) -> Response<R> {
        // A task cancelled before it asks sends nothing at all.
        if Task.isCancelled { throw .cancelled }
        let link = CancellationLink()
        let result = await withTaskCancellationHandler {
            // Unsafe rather than checked (which allocates and checks on every resume): the completion
            // runs exactly once per send, what `RequestOperation` guarantees and the tests check.
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Response<R>, NetworkError>, Never>) in
                let handle = send(request, completionQueue: .immediate, progress: progress) { continuation.resume(returning: $0) }
                link.attach(handle)
            }
        } onCancel: {
            link.cancel()
        }
        return try result.get()
    }
}

/// Connects a task's cancellation to a send that may not have started yet.
private final class CancellationLink: Sendable {
    private let state = Locked<(handle: RequestHandle?, cancelled: Bool)>((nil, false))

    func attach(_ handle: RequestHandle) {
        let cancelled = state.withLock { state in
            state.handle = handle
            return state.cancelled
        }
        if cancelled { handle.cancel() }
    }

    func cancel() {
        let handle = state.withLock { state in
            state.cancelled = true
            return state.handle
        }
        handle?.cancel()
    }
}
