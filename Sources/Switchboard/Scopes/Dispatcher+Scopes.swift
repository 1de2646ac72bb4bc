import Dispatch
import Foundation

/// Cancellation scopes: sends tied to an owner (a screen), and cancelling by owner, by request type or
/// all at once; and the list of sends running now.
extension Dispatcher {
    /// Sends a request that belongs to `owner`: it is cancelled when `owner` is deallocated (within
    /// about 200 ms: the dispatcher looks at its sends' owners that often) or by ``cancel(owner:)``. The owner is held
    /// weakly; the send keeps nothing of it alive. An owner given on the main thread (a view
    /// controller) is looked at on the main queue, never elsewhere, so that it dies on the main actor
    /// (about 400 ms then: the look is queued on main and its answer read at the next).
    ///
    /// ```swift
    /// final class ProfileScreen {
    ///     func viewDidLoad() {
    ///         Dispatcher.shared.send(GetUserInfo(id: "123"), owner: self) { result in … }
    ///     }
    /// }   // the screen goes away: the request is cancelled, and observers get `cancelled`
    /// ```
    /// - Parameters:
    ///   - request: the request.
    ///   - owner: the object whose lifetime bounds the send.
    ///   - completion: called once with the response or the error (``NetworkError/cancelled`` when the
    ///     owner went away first), on ``Configuration/callbackQueue``.
    /// - Returns: a handle to cancel the send.
    @discardableResult
    public func send<R: Request>(
        _ request: R,
        owner: AnyObject,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)? = nil
    ) -> RequestHandle {
        send(request, completionQueue: nil, owner: owner, completion: completion)
    }

    /// Sends a request that belongs to `owner` (see ``send(_:owner:completion:)``) and reports its
    /// progress.
    /// - Parameters:
    ///   - request: the request.
    ///   - owner: the object whose lifetime bounds the send.
    ///   - progress: called as bytes move, on ``Configuration/callbackQueue``, never after `completion`.
    ///   - completion: called once with the response or the error, on ``Configuration/callbackQueue``.
    /// - Returns: a handle to cancel the send.
    @discardableResult
    public func send<R: Request>(
        _ request: R,
        owner: AnyObject,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        completion: @escaping @Sendable (Result<Response<R>, NetworkError>) -> Void
    ) -> RequestHandle {
        send(request, completionQueue: nil, owner: owner, progress: progress, completion: completion)
    }

    /// The number of distinct transfers that identical sends share now (for tests and diagnostics).
    package var sharedTransferCount: Int { coalescer.sharedCount }

    /// Cancels every unfinished send that belongs to `owner`; each reports `cancelled` once.
    /// - Returns: how many sends were told to cancel.
    @discardableResult
    public func cancel(owner: AnyObject) -> Int {
        cancel { [identifier = ObjectIdentifier(owner)] in $0.owner?.identifier == identifier }
    }

    /// Cancels every unfinished send of requests of type `R`; each reports `cancelled` once.
    /// - Returns: how many sends were told to cancel.
    @discardableResult
    public func cancelAll<R: Request>(of type: R.Type) -> Int {
        let key = ObjectIdentifier(R.self)
        return cancel { $0.requestTypeKey == key }
    }

    /// The sends that have not finished, oldest first: each one's request, URL, start time, progress and
    /// attempts, as they are now.
    public var runningRequests: [RunningRequest] {
        operations().map(\.snapshot).sorted { $0.id < $1.id }
    }

    /// Cancels the operations that match; returns how many.
    private func cancel(where matches: (any InFlightOperation) -> Bool) -> Int {
        let chosen = operations().filter(matches)
        for operation in chosen { operation.cancel() }
        return chosen.count
    }
}
