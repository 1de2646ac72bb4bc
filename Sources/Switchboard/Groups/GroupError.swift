/// Why a batch, chain or graph did not succeed, with every member's outcome.
///
/// ``error`` is the cause: the failed member's error, ``NetworkError/cancelled`` when the group was
/// stopped, or ``NetworkError/invalidRequest(reason:)`` for a group that could not run (started twice,
/// empty, a graph with a cycle or a missing dependency: then nothing was sent).
public struct GroupError: Error, Sendable, CustomStringConvertible {
    /// The cause.
    public let error: NetworkError
    /// The member that failed, if a member did (the first one, for a group that ran them all).
    public let failed: MemberOutcome?
    /// Every member's outcome, in the order added (``MemberOutcome/result`` is `nil` for a member
    /// that never started).
    public let outcomes: [MemberOutcome]

    /// Creates an error.
    public init(_ error: NetworkError, failed: MemberOutcome? = nil, outcomes: [MemberOutcome] = []) {
        self.error = error
        self.failed = failed
        self.outcomes = outcomes
    }

    /// Whether the group was stopped.
    public var isCancelled: Bool { error.isCancelled && failed == nil }

    public var description: String {
        guard let failed else { return "group: \(error)" }
        return "group member \(failed.name ?? String(failed.index)) (\(type(of: failed.request))) failed: \(error)"
    }
}

/// What happened to one member of a group.
public struct MemberOutcome: Sendable {
    /// Its place in the group (the order added).
    public let index: Int
    /// Its name, for a graph node.
    public let name: String?
    /// Its request (for a graph node built from other nodes' responses, once built).
    public let request: any Request
    /// Its result; `nil` if it never started. A member stopped by the group (a fail-fast batch, a
    /// stop, a failed dependency) is ``NetworkError/cancelled``.
    public let result: Result<any AnyResponse, NetworkError>?

    /// Creates an outcome.
    public init(index: Int, name: String? = nil, request: any Request, result: Result<any AnyResponse, NetworkError>?) {
        self.index = index
        self.name = name
        self.request = request
        self.result = result
    }

    /// The response, on success.
    public var response: (any AnyResponse)? { if case .success(let response)? = result { response } else { nil } }

    /// The error, on failure.
    public var error: NetworkError? { if case .failure(let error)? = result { error } else { nil } }
}
