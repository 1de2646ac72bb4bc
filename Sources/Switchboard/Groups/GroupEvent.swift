/// What happened to a batch, chain or graph as a whole. Its members' own events go to the observers
/// of their request types as for any send.
public enum GroupEvent: Sendable {
    /// The group started.
    case started
    /// A member finished: `completed` of `total` so far (a chain's total grows as requests are added).
    case progress(completed: Int, total: Int)
    /// Every member succeeded. The last event.
    case finished
    /// A member failed (or the group could not run). The last event.
    case failed(GroupError)
    /// The group was stopped. The last event.
    case cancelled

    /// Whether this is the group's last event.
    public var isTerminal: Bool {
        switch self {
        case .started, .progress: false
        case .finished, .failed, .cancelled: true
        }
    }
}

/// Something that follows a group's life, such as a loading indicator: YTKNetwork's request
/// accessories on `YTKBatchRequest` and `YTKChainRequest`. An object can be both this and a
/// ``RequestAccessory``, to show one spinner for single requests and for groups. Every method has an
/// empty default; all run on ``Configuration/callbackQueue`` except `willStart`, which runs on the thread
/// that starts the group.
public protocol GroupAccessory: Sendable {
    /// The group is about to start.
    func willStart(_ group: any RequestGroup)
    /// The group ended (`error` is `nil` on success); its closures and delegate haven't heard yet.
    func willStop(_ group: any RequestGroup, error: GroupError?)
    /// The group's closures, delegate and observers on the callback queue have run.
    func didStop(_ group: any RequestGroup, error: GroupError?)
}

extension GroupAccessory {
    public func willStart(_ group: any RequestGroup) {}
    public func willStop(_ group: any RequestGroup, error: GroupError?) {}
    public func didStop(_ group: any RequestGroup, error: GroupError?) {}
}

/// What batches, chains and graphs have in common.
public protocol RequestGroup: AnyObject, Sendable {
    /// Stops the group: running members are cancelled, the rest never start; the group ends
    /// ``GroupEvent/cancelled`` (its failure closure gets a ``GroupError`` whose error is
    /// ``NetworkError/cancelled``), unless it had already ended.
    func stop()
    /// Whether the group has ended.
    var isFinished: Bool { get }
    /// Members finished so far and the total.
    var progress: (completed: Int, total: Int) { get }
}
