import Foundation

/// A download started with ``Dispatcher/download(_:progress:completion:)``: pause it, resume it,
/// cancel it. Each start is a send of its own (observers see its events, `cancelled` for a pause);
/// the completion comes once, when the download ends for good.
public final class DownloadHandle: Sendable {
    private struct State {
        var current: RequestHandle?
        /// A send runs (it may be stopping after a pause).
        var running = false
        var paused = false
        /// Resume once the paused send has ended.
        var resumeWhenStopped = false
        var finished = false
        /// `cancel()` was called while a send ran.
        var cancelRequested = false
    }

    /// Locked: pause, resume and cancel come from any thread; a send's end comes on the callback queue.
    private let state = Locked(State())
    /// Starts one send of the download; its completion goes to ``sendEnded(cancelled:deliver:)``.
    private let launch: @Sendable (DownloadHandle) -> RequestHandle?
    /// The download's completion with an error (a cancel while paused, a dispatcher gone).
    private let end: @Sendable (NetworkError) -> Void

    init<R: DownloadRequest>(
        callbackQueue: CallbackQueue,
        start: @escaping @Sendable (@escaping @Sendable (Result<Response<R>, NetworkError>) -> Void) -> RequestHandle?,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    ) {
        end = { error in callbackQueue.run { completion?(.failure(error)) } }
        launch = { handle in
            start { result in
                handle.sendEnded(cancelled: result.failure?.isCancelled == true) { completion?(result) }
            }
        }
    }

    /// The ``RequestHandle/id`` of the current (or last) send: the ``RequestEvent/sendID`` of its events.
    public var currentSendID: UInt64? { state.withLock { $0.current?.id } }

    /// Whether the download is paused.
    public var isPaused: Bool { state.withLock { $0.paused } }

    /// Whether the download ended for good: completed, failed or cancelled.
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Stops the download, keeping what arrived; ``resume()`` goes on from there. Observers see the
    /// send end `cancelled`; the completion is not called. Nothing happens once it finished.
    public func pause() {
        let current = state.withLock { state -> RequestHandle? in
            guard !state.finished, !state.paused else { return nil }
            state.paused = true
            state.resumeWhenStopped = false
            return state.current
        }
        current?.cancel()
    }

    /// Goes on with a paused download: a new send asks for the rest of the file (`Range`, `If-Range`).
    public func resume() {
        let start = state.withLock { state -> Bool in
            guard state.paused, !state.finished else { return false }
            state.paused = false
            if state.running {
                state.resumeWhenStopped = true  // the paused send is still stopping
                return false
            }
            state.running = true  // now, so a cancel that comes before the send starts stops it
            return true
        }
        if start { launchSend() }
    }

    /// Ends the download for good; the completion gets ``NetworkError/cancelled``. The partial file
    /// stays, so a later download of the same URL with the same resume key (``DownloadDestination/resumeKey``)
    /// resumes from it.
    public func cancel() {
        let (current, endNow) = state.withLock { state -> (RequestHandle?, Bool) in
            guard !state.finished else { return (nil, false) }
            if state.running {
                state.paused = false
                state.resumeWhenStopped = false
                state.cancelRequested = true
                return (state.current, false)
            }
            state.finished = true  // paused, nothing running: end here
            return (nil, true)
        }
        current?.cancel()
        if endNow { end(.cancelled) }
    }

    /// Starts the first send.
    func begin() {
        state.withLock { $0.running = true }
        launchSend()
    }

    /// Starts a send; the state says `running` already.
    private func launchSend() {
        guard let handle = launch(self) else {
            state.withLock {
                $0.finished = true; $0.running = false
            }
            end(.cancelled)  // the dispatcher is gone
            return
        }
        // A pause (or cancel) that came while the send started found no send to stop: stop it now.
        let stop = state.withLock { state -> Bool in
            state.current = handle
            return state.paused || state.cancelRequested
        }
        if stop { handle.cancel() }
    }

    private enum Next { case deliver, resume, wait }

    /// A send ended: the download's end, or a pause (then maybe a resume already asked for).
    private func sendEnded(cancelled: Bool, deliver: () -> Void) {
        let next = state.withLock { state -> Next in
            state.running = false
            if cancelled, state.paused || state.resumeWhenStopped {
                if state.resumeWhenStopped {
                    state.resumeWhenStopped = false
                    state.running = true
                    return .resume
                }
                return .wait
            }
            state.finished = true
            return .deliver
        }
        switch next {
        case .deliver: deliver()
        case .resume: launchSend()
        case .wait: break
        }
    }
}

extension Dispatcher {
    /// Downloads to a file, with progress, pause and resume. The request's events go to its observers
    /// as for any send; see ``DownloadRequest`` for how a download resumes.
    ///
    /// ```swift
    /// let handle = Dispatcher.shared.download(Download("/files/big.bin", to: folder), progress: { progress in
    ///     bar.value = progress.fractionReceived ?? 0
    /// }) { result in
    ///     if case .success(let response) = result { open(response.fileURL!) }
    /// }
    /// ```
    /// - Parameters:
    ///   - request: the download.
    ///   - progress: bytes of the whole file received so far, on ``Configuration/callbackQueue``.
    ///   - completion: once, when the download ends for good (not at a pause), on ``Configuration/callbackQueue``.
    /// - Returns: a handle to pause, resume or cancel the download.
    @discardableResult
    public func download<R: DownloadRequest>(
        _ request: R,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)? = nil
    ) -> DownloadHandle {
        let handle = DownloadHandle(
            callbackQueue: configuration.callbackQueue,
            start: { [weak self] ended in
                self?.send(request, completionQueue: nil, progress: progress, completion: ended)
            }, completion: completion)
        handle.begin()
        return handle
    }
}
