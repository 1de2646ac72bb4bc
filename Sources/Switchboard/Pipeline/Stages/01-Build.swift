import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 1 — build: the request value becomes the `URLRequest` the attempts start from, once per send.
///
/// The request's own `makeURLRequest`, or: the base (or CDN) URL and the path, the query parameters,
/// the URL filters, the headers (defaults, encoding, the request's, its credentials) and the body. A
/// multipart form is assembled in memory, or over the threshold in an owner-only temporary file the send
/// keeps until it ends. User code (filters, `makeURLRequest`) runs here without any lock held. A bad
/// input is ``NetworkError/invalidRequest(reason:)`` and nothing is sent. When building reads files or
/// streams (``RequestBody/isSlowToBuild``), the driver runs this stage on a global queue, not on the
/// sender's thread (the main thread, often).
enum BuildStage {
    /// The request before authentication. `body` is the request's ``Request/body``, read once.
    static func run<R: Request>(_ request: R, body: RequestBody?, configuration: ConfigurationSnapshot) throws(NetworkError) -> RequestBuilder.Prepared {
        try RequestBuilder.prepare(request, body: body, configuration: configuration)
    }
}
