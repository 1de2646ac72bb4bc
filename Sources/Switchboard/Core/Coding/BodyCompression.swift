import Foundation

/// Whether a request's body is compressed before it is sent: gzip (`Content-Encoding: gzip`) for
/// bodies of at least `minimumSize` bytes, or not at all (the default). Ask for it for every send with
/// ``Configuration/bodyCompression``, or for one request with ``Request/bodyCompression``.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.bodyCompression = .gzip() }
///
/// struct UploadEvents: Request {
///     let events: [Event]
///     var method: HTTPMethod { .post }
///     var path: String { "/events" }
///     var body: RequestBody? { .encodable(events) }
///     var bodyCompression: BodyCompression? { .gzip(minimumSize: 0) }
/// }
/// ```
///
/// Compressed are the bodies built in memory: bytes, text, JSON, an encodable value, encoded
/// parameters, a multipart form assembled in memory. A file body, and a form assembled in a file (over
/// ``Configuration/multipartMemoryThreshold``), go as they are; so does a request that sets its own
/// `Content-Encoding`, and a ``Request/makeURLRequest(baseURL:)`` request. zlib is loaded at run time
/// (`libz.so.1`; `libz.1.dylib` on Apple platforms, written for, not built or tested in this project's
/// CI): where it can't be, a send that asks for compression fails with
/// ``NetworkError/invalidRequest(reason:)`` before anything is sent, never sending the body
/// uncompressed instead.
///
/// Only ask for it where the server accepts compressed request bodies: many don't (HTTP has no way
/// to ask first). A dispatcher-wide setting applies to every host it sends to, absolute URLs
/// included (a presigned upload URL, a third party's API): set it per request where that matters.
/// Compression happens when the request is built, before the adapters: an adapter sees the
/// compressed body (a signature over it holds; one that edits the body must not be used with it).
/// Logs and ``Dispatcher/cURLDescription(for:redacted:)`` show a compressed body as binary data.
public enum BodyCompression: Sendable, Hashable {
    /// Bodies go as they are.
    case none
    /// Bodies of at least `minimumSize` bytes are gzipped at `level` (1 fastest … 9 smallest; 6 is
    /// zlib's default; a negative level means 6). Smaller ones go as they are (below about 1 KiB gzip's
    /// header and trailer and the CPU cost outweigh what it saves), and so does a body gzip doesn't
    /// make smaller.
    case gzip(minimumSize: Int = 1024, level: Int = 6)

    /// `data` as a gzip stream at `level`: for a body you build yourself (a
    /// ``Request/makeURLRequest(baseURL:)`` request, where you set `Content-Encoding` too).
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` when zlib can't be loaded or fails.
    public static func gzipped(_ data: Data, level: Int = 6) throws(NetworkError) -> Data {
        try Zlib.shared.get().gzip(data, level: level)
    }

    /// `body` compressed as this setting says, or `nil` to send it as it is (also when gzip doesn't
    /// make it smaller: an image, already compressed data).
    func compress(_ body: Data) throws(NetworkError) -> Data? {
        guard case .gzip(let minimumSize, let level) = self, !body.isEmpty, body.count >= minimumSize else { return nil }
        let compressed = try Self.gzipped(body, level: level)
        return compressed.count < body.count ? compressed : nil
    }
}
