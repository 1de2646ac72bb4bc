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
        // The operation exists before the task can be cancelled, so the cancel handler reaches it
        // directly: a cancel before `start` is taken by `start`, after `started` (no link object, no
        // handle, no closure around the continuation).
        let (operation, transport) = makeOperation(request, completionQueue: .immediate, progress: progress, completion: nil)
        let result = await withTaskCancellationHandler {
            // Unsafe rather than checked (which allocates and checks on every resume): the operation
            // resumes it exactly once, what `RequestOperation` guarantees and the tests check.
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Response<R>, NetworkError>, Never>) in
                operation.resume(continuation)
                launch(operation, on: transport)
            }
        } onCancel: {
            operation.cancel()
        }
        SanitizerHandOff.acquire(operation)
        return try result.get()
    }
}
