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
/// progress → completion, the completion exactly once and last, on the transport's queue (the
/// attempt's options and gated callbacks are made by `AttemptTransfer`, for this stage and stage 4 alike).
enum TransportStage {
    /// Starts the attempt's transfer: a download around the transport, or the transport's own.
    static func run<R: Request>(
        _ urlRequest: URLRequest, prepared: RequestBuilder.Prepared, origin request: R, download: (destination: DownloadDestination, resumes: Bool)?,
        partialDownloads directory: URL, options: TransferOptions, callbacks: TransferCallbacks, on transport: any Transport
    ) -> any TransportTask {
        guard let download else {
            return transport.perform(Self.request(urlRequest, prepared, origin: request), options: options, callbacks: callbacks)
        }
        return DownloadTransfer.perform(
            urlRequest, body: prepared.body, origin: request, destination: download.destination, resumes: download.resumes,
            directory: directory, transport: transport, options: options, callbacks: callbacks
        )
    }

    /// The attempt's request as the transport gets it (here and in stage 4). The builder assigns a
    /// standard request's `timeoutInterval` (adapters and interceptors change copies of it, which keep
    /// that); a custom `URLRequest` may have been made with it, unassigned.
    static func request<R: Request>(_ urlRequest: URLRequest, _ prepared: RequestBuilder.Prepared, origin request: R) -> TransportRequest {
        var sent = TransportRequest(urlRequest, body: prepared.body, origin: request)
        sent.timeoutIntervalIsSet = !prepared.isCustom
        return sent
    }
}
