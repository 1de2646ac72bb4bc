import Foundation

/// A send that has not finished, as ``Dispatcher/runningRequests`` lists it: what it is, where it goes,
/// since when, and how far it got.
public struct RunningRequest: Sendable, Identifiable, CustomStringConvertible {
    /// The send's id (its ``RequestHandle/id`` and the ``RequestEvent/sendID`` of its events).
    public let id: UInt64
    /// The request.
    public let request: any Request
    /// The URL of the current attempt's transfer; `nil` until the first transfer starts (while the
    /// request is built, adapted, or answered from the cache).
    public let url: URL?
    /// When the send was made.
    public let startedAt: Date
    /// The bytes sent and received so far by the current attempt, as the transport last reported;
    /// `nil` before any.
    public let progress: TransferProgress?
    /// The attempts made so far (more than 1 after retries).
    public let attempts: Int
    /// Whether the send belongs to an owner (``Dispatcher/send(_:owner:progress:completion:)``).
    public let hasOwner: Bool

    /// The request's type.
    public var requestType: any Request.Type { type(of: request) }

    /// The request type's name (`GetUserInfo`).
    public var requestTypeName: String { String(describing: type(of: request)) }

    /// One line: `#3 GetUserInfo GET https://… 1.2 s, 512 B received`.
    public var description: String {
        let elapsed = String(format: "%.1f s", Date().timeIntervalSince(startedAt))
        let received = progress.map { ", \($0.bytesReceived) B received" } ?? ""
        return "#\(id) \(requestTypeName) \(request.method.rawValue) \(url?.absoluteString ?? "(not sent yet)") \(elapsed)\(received)"
    }
}

/// The object a send belongs to, held weakly: when it is deallocated, the dispatcher's sweeper cancels
/// the send.
///
/// An owner given on the main queue may be a main-actor object (a view controller), which must die on
/// the main actor; a load of its weak reference makes a strong one that could be the last, and its
/// `deinit` would run where the load ran. So such an owner's reference is loaded only on the main
/// queue: the sweeper asks there, and acts on the answer at its next look.
///
/// `@unchecked Sendable`: the `weak` reference is written once, in `init` (Swift makes weak loads
/// thread-safe); the rest is immutable or an atomic flag.
final class OwnerLink: @unchecked Sendable {
    private weak var object: AnyObject?
    /// The owner's identity, for ``Dispatcher/cancel(owner:)`` (compared without loading the reference).
    let identifier: ObjectIdentifier
    /// Whether the reference is loaded only on the main queue.
    private let loadsOnMain: Bool
    /// Set on the main queue when a look found the owner gone.
    private let gone = AtomicFlag()
    /// Set by the one sweep that cancels the send of a released owner (later sweeps leave it be).
    private let cancelClaimed = AtomicFlag()

    /// Whether this call is the first to claim the cancel of a released owner's send.
    func claimCancel() -> Bool { cancelClaimed.testAndSet() }

    init(_ object: AnyObject) {
        self.object = object
        identifier = ObjectIdentifier(object)
        loadsOnMain = MainQueue.isCurrent
    }

    enum Liveness {
        case alive, released
        /// Not known here: the main queue was asked; the answer comes at the next look.
        case askedOnMain
    }

    /// Whether the owner was deallocated, without loading a main-queue owner's reference elsewhere.
    func liveness() -> Liveness {
        if gone.isSet { return .released }
        guard loadsOnMain, !MainQueue.isCurrent else { return object == nil ? .released : .alive }
        DispatchQueue.main.async { [self] in
            if object == nil { gone.set() }
        }
        return .askedOnMain
    }
}
