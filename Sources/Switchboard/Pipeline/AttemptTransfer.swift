import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What stages 4 and 5 hand a transport for one attempt: its options, and its callbacks with the
/// progress gate in front of observers.
extension TransferOptions {
    /// The options of an attempt of `request`, built as `prepared`. The idle timeout is the request's
    /// own; else a custom `URLRequest`'s `timeoutInterval`, when it was set (not `URLRequest`'s default
    /// of 60 s); else the configuration's.
    init<R: Request>(for request: R, _ prepared: RequestBuilder.Prepared, timeout: TimeInterval, configuration: ConfigurationSnapshot) {
        self.init(
            timeout: timeout,
            priority: request.priority.taskPriority,
            credentials: request.credentials,
            maximumResponseSize: configuration.value.maximumResponseSize,
            redirects: configuration.value.redirects,
            idleTimeout: request.idleTimeout ?? (prepared.isCustom ? IdleTimeouts.own(prepared.urlRequest) : nil) ?? configuration.value.idleTimeout
        )
    }
}

extension TransferCallbacks {
    /// The callbacks of an attempt: every progress value goes to `record`; to `report` (observers, the
    /// send's closure) at most one per 16 ms and always the one that completes the body; the last one
    /// held back goes out before a successful `completion`.
    static func attempt(
        record: @escaping @Sendable (TransferProgress) -> Void, report: (@Sendable (TransferProgress) -> Void)?,
        completion: @escaping @Sendable (Result<TransportResponse, NetworkError>) -> Void
    ) -> TransferCallbacks {
        guard let report else { return TransferCallbacks(progress: record, completion: completion) }
        let gate = ProgressGate(report)
        return TransferCallbacks(
            progress: {
                record($0)
                gate.offer($0)
            },
            completion: { result in
                if case .success = result { gate.flush() }
                completion(result)
            })
    }
}

/// Passes on at most one progress value per 16 ms (a screen frame), and always one that completes the
/// body sent or received: a transport reports every 16 KiB chunk, 65,000 times a GiB. The last value
/// held back is passed on by ``flush()`` when the transfer succeeds.
final class ProgressGate: Sendable {
    /// Locked: a transport orders progress before its completion but needn't call both on one thread
    /// (a download's late claim completes on a global queue).
    private let state = Locked((last: UInt64(0), held: TransferProgress?.none))
    private let post: @Sendable (TransferProgress) -> Void

    init(_ post: @escaping @Sendable (TransferProgress) -> Void) {
        self.post = post
    }

    func offer(_ progress: TransferProgress) {
        let complete =
            progress.bytesReceived == progress.expectedBytesToReceive
            || (progress.bytesReceived == 0 && progress.bytesSent == progress.expectedBytesToSend)
        let now = DispatchTime.now().uptimeNanoseconds
        let admitted = state.withLock { state -> Bool in
            guard complete || now &- state.last >= 16_000_000 else {
                state.held = progress
                return false
            }
            state.last = now
            state.held = nil
            return true
        }
        if admitted { post(progress) }
    }

    func flush() {
        if let held = state.withLock({ state in
            defer { state.held = nil }
            return state.held
        }) {
            post(held)
        }
    }
}
