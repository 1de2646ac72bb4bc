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
/// `@unchecked Sendable`: the `weak` reference is written once, in `init`; Swift makes weak loads
/// thread-safe, and nothing else is stored.
final class OwnerLink: @unchecked Sendable {
    private(set) weak var object: AnyObject?

    init(_ object: AnyObject) {
        self.object = object
    }

    /// Whether the owner was deallocated.
    var isReleased: Bool { object == nil }
}
