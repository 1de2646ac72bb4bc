import Foundation

/// A request whose response body goes to a file, in bounded memory, with progress, and which resumes
/// where a failed, cancelled or paused attempt stopped (YTKNetwork's `resumableDownloadPath`).
///
/// ```swift
/// struct DownloadVideo: DownloadRequest {
///     let id: String
///     var path: String { "/videos/\(id).mp4" }
///     var destination: URL { documents.appendingPathComponent("\(id).mp4") }
/// }
///
/// let handle = Dispatcher.shared.download(DownloadVideo(id: "42"), progress: { print($0.fractionReceived ?? 0) }) { result in
///     if case .success(let response) = result { play(response.fileURL!) }
/// }
/// handle.pause()    // keeps what arrived
/// handle.resume()   // asks for the rest: `Range` with `If-Range`
/// ```
///
/// How a download resumes:
/// - Until it is complete the body goes to a partial file in ``Configuration/partialDownloadsDirectory``,
///   named after the URL and the destination (not an absolute path, which an iOS app's container
///   changes between launches), with the response's `ETag` or `Last-Modified` beside it.
/// - A failure, a cancel or a pause keeps them when the server gave a validator; the next send of a
///   request for the same URL and destination asks for the rest with `Range` and `If-Range`, and
///   appends a `206`. A `200` (the server ignored the range, or the file changed) is written from the
///   start; a `416` whose length is the partial file's completes it, any other restarts from zero.
/// - On success the partial file is moved to ``destination`` (replacing what was there), and nothing
///   is left in the partial downloads directory. URLSession's own resume data is never used (it is
///   always `nil` on Linux).
/// - The response is ``Response/fileURL``; ``Response/data`` is empty. A failure status (404, 500, …)
///   fails with its error, without the error's body, and keeps the partial file.
/// - One download per URL and destination runs at a time; a second waits up to 3 seconds for the
///   first to end (the previous attempt of a retry or a resume may still be stopping), then fails
///   with ``NetworkError/invalidRequest(reason:)``.
public protocol DownloadRequest: Request {
    /// Where the file goes: a file URL, or a directory (then the file is named after the URL's last
    /// path component). Its folder is created when missing.
    var destination: URL { get }

    /// Whether a failed, cancelled or paused download keeps its partial file to resume from. Default: `true`.
    var resumes: Bool { get }
}

extension DownloadRequest {
    public var resumes: Bool { true }
    /// A download's body is a file, not JSON.
    public var responseFormat: ResponseFormat { .data }
    /// Downloads report progress to observers.
    public var reportsProgress: Bool { true }
    /// A day: a large download takes longer than an API call's deadline; the idle timeout
    /// (``Configuration/idleTimeout``) still ends a stalled one.
    public var timeout: TimeInterval? { 86_400 }
}

/// A download of a URL or path to a file, without a type of your own.
///
/// ```swift
/// let response = try await Dispatcher.shared.response(for: Download("/files/big.bin", to: downloads))
/// ```
public struct Download: DownloadRequest {
    /// The path below the base URL, or an absolute URL.
    public let path: String
    /// The file, or a folder (the file is then named after the URL's last path component).
    public let destination: URL
    /// Whether an interrupted download keeps its partial file to resume from.
    public let resumes: Bool
    /// Extra header fields.
    public let headers: HTTPHeaders

    /// Creates a download.
    /// - Parameters:
    ///   - path: a path below the base URL, or an absolute URL.
    ///   - destination: the file, or a directory (the file is named after the URL's last path component).
    ///   - resumes: whether an interrupted download keeps its partial file to resume from.
    ///   - headers: extra header fields.
    public init(_ path: String, to destination: URL, resumes: Bool = true, headers: HTTPHeaders = [:]) {
        self.path = path
        self.destination = destination
        self.resumes = resumes
        self.headers = headers
    }
}
