import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 4 — coalesce: a GET or HEAD with a body in memory (or none) that is identical to a transfer in
/// flight joins it instead of starting another; identical means the ``CoalescingKey``: method, final
/// URL, header fields, body bytes, credentials, size limit and redirect rules. The shared transfer's
/// progress and end fan out to every send still waiting, in join order; one that leaves (a cancel, its
/// deadline) gets `cancelled` alone, and the last to leave stops the transfer. Downloads, requests that
/// opt out (``Request/coalescesDuplicates``) and dispatchers that turn it off
/// (``Configuration/coalescesDuplicates``) never share.
enum CoalesceStage {
    /// Joins an identical transfer in flight or starts one others may join; `nil` when the request
    /// can't be shared (then the transport stage starts it alone).
    static func run(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks, coalescer: Coalescer, on transport: any Transport) -> (
        any TransportTask
    )? {
        guard let key = CoalescingKey(request, options: options) else { return nil }
        return coalescer.perform(request, key: key, options: options, callbacks: callbacks, on: transport)
    }
}
