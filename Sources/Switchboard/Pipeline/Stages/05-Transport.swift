import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 5 — transport: the attempt's request goes to the ``Transport`` with the rules every transport
/// keeps alike (``TransferRules``: redirects and the credentials they strip, the Basic challenge, size
/// limits, a body cut short; ``ResponseFraming``: each head checked before its body). A
/// ``DownloadRequest`` goes through a ``DownloadTransfer`` around the transport (resume, placement).
/// The attempt's deadline is kept above the transport, by the driver and its sweeper. Callbacks: head →
/// progress → completion, the completion exactly once and last, on the transport's queue.
enum TransportStage {
    /// The transfer's options for an attempt of `request`.
    static func options<R: Request>(for request: R, timeout: TimeInterval, configuration: Configuration) -> TransferOptions {
        TransferOptions(
            timeout: timeout,
            priority: request.priority.taskPriority,
            credentials: request.credentials,
            maximumResponseSize: configuration.maximumResponseSize,
            redirects: configuration.redirects,
            idleTimeout: configuration.idleTimeout
        )
    }

    /// The callbacks of an attempt: every progress value goes to `record`; to `report` (observers, the
    /// send's closure) at most one per 16 ms and always the one that completes the body; the last one
    /// held back goes out before a successful `completion`.
    static func callbacks(
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

    /// Starts the transfer: a download around the transport, a shared transfer (stage 4), or the
    /// transport's own.
    static func run<R: Request>(
        _ urlRequest: URLRequest, prepared: RequestBuilder.Prepared, origin request: R, download: (destination: DownloadDestination, resumes: Bool)?,
        configuration: Configuration, options: TransferOptions, callbacks: TransferCallbacks, coalescer: Coalescer?, on transport: any Transport
    ) -> any TransportTask {
        if let download {
            return DownloadTransfer.perform(
                urlRequest, body: prepared.body, origin: request, destination: download.destination, resumes: download.resumes,
                directory: configuration.partialDownloadsDirectory, transport: transport, options: options, callbacks: callbacks
            )
        }
        let transportRequest = TransportRequest(urlRequest, body: prepared.body, origin: request)
        return CoalesceStage.run(transportRequest, options: options, callbacks: callbacks, coalescer: coalescer, on: transport)
            ?? transport.perform(transportRequest, options: options, callbacks: callbacks)
    }
}

/// Passes on at most one progress value per 16 ms (a screen frame), and always one that completes the
/// body sent or received: a transport reports every 16 KiB chunk, 65,000 times a GiB. The last value
/// held back is passed on by ``flush()`` when the transfer succeeds.
final class ProgressGate: Sendable {
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
