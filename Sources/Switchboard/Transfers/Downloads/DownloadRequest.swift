import Foundation

/// A request whose response body goes to a file, in bounded memory, with progress, and which resumes
/// where a failed, cancelled or paused attempt stopped (YTKNetwork's `resumableDownloadPath`).
///
/// ```swift
/// struct DownloadVideo: DownloadRequest {
///     let id: String
///     var path: String { "/videos/\(id).mp4" }
///     var destination: DownloadDestination { .file(documents.appendingPathComponent("\(id).mp4"), options: [.removePreviousFile]) }
/// }
///
/// let handle = Dispatcher.shared.download(DownloadVideo(id: "42"), progress: { print($0.fractionReceived ?? 0) }) { result in
///     if case .success(let response) = result { play(response.fileURL!) }
/// }
/// handle.pause()    // keeps what arrived
/// handle.resume()   // asks for the rest: `Range` with `If-Range`
/// ```
///
/// Where the file goes (see ``DownloadDestination``):
/// - The destination is chosen when the final response head arrives, before any byte of the body is
///   written, and checked then and at the move. A file already there is an error
///   (``DownloadError/destinationExists(_:)``) and stays untouched unless the destination's options
///   hold ``DownloadDestination/Options/removePreviousFile``; a symbolic link there is never followed.
/// - A folder destination names the file from the response (`Content-Disposition`, else the URL's
///   last path component) only when the name is safe (``DownloadDestination/suggestedFileName(for:)``),
///   else `download`, and the file always lies in the folder.
///
/// How a download resumes:
/// - Until it is complete the body goes to a partial file in ``Configuration/partialDownloadsDirectory``,
///   named after the request's URL and the destination's ``DownloadDestination/resumeKey`` (the file's
///   or folder's path with the home directory as `~`, which survives an iOS relaunch that moves the
///   app's container; or the key given to a closure destination). Both are known before the response.
/// - Every attempt sends `Accept-Encoding: identity`, so offsets are offsets of the file. The partial
///   file is kept to resume from only with a strong `ETag`, or without one a `Last-Modified` at least
///   60 s older than the response's `Date` (an older date could hide a change within the same second),
///   and only for a body without a `Content-Encoding`.
/// - A failure, a cancel or a pause keeps it; the next send of a request for the same URL and resume
///   key asks for the rest with `Range` and `If-Range` (the validator). A `206` is appended only when it
///   repeats that validator, its `Content-Range` starts where the partial file ends, runs to the end,
///   and names the complete length the first response named. A `200` is written from the start. A
///   `416` completes the file only when it names the recorded complete length, which is the partial
///   file's size, and repeats the validator `If-Range` sent (the same kind). Any other answer (a `206`
///   without the validator, with `/*`, another range or length; a `416` without the validator or with
///   another) discards the partial file and starts again from byte 0, once; a second such answer fails
///   with ``DownloadError/unusableResume(reason:)``. With a `Range` of the app's own nothing is
///   resumed, and a `416` fails with ``NetworkError/httpStatus(_:)``.
/// - The complete file must have the complete length the server named
///   (``DownloadError/lengthMismatch(expected:received:)`` otherwise, nothing moved into place). Then it
///   is moved to the destination and nothing is left in the partial downloads directory. URLSession's
///   own resume data is never used (it is always `nil` on Linux).
/// - The response is ``Response/fileURL``; ``Response/data`` is empty. A failure status (404, 500, …)
///   fails with its error, without the error's body, and keeps the partial file.
/// - One download per URL and resume key runs at a time: two downloads of one URL with the same resume
///   key share one partial file. A second waits up to 3 seconds for the first to end (the previous
///   attempt of a retry or a resume may still be stopping), then fails with
///   ``NetworkError/invalidRequest(reason:)``.
public protocol DownloadRequest: Request {
    /// Where the file goes, and whether an existing file may be replaced: ``DownloadDestination/file(_:options:)``,
    /// ``DownloadDestination/folder(_:options:)`` or a closure that decides when the head arrives.
    var destination: DownloadDestination { get }

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
    /// (``Request/idleTimeout`` or ``Configuration/idleTimeout``) still ends a stalled one.
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
    /// Where the file goes.
    public let destination: DownloadDestination
    /// Whether an interrupted download keeps its partial file to resume from.
    public let resumes: Bool
    /// Extra header fields.
    public let headers: HTTPHeaders

    /// Creates a download to a file or a folder, which is created when missing. A file already there is
    /// an error (``DownloadError/destinationExists(_:)``) and stays untouched; to replace it, pass
    /// ``DownloadDestination/file(_:options:)`` with ``DownloadDestination/Options/removePreviousFile``.
    /// - Parameters:
    ///   - path: a path below the base URL, or an absolute URL.
    ///   - destination: a file, or a directory (a URL with a trailing `/`, or a directory that exists
    ///     now): ``DownloadDestination/folder(_:options:)``, which names the file from the response.
    ///   - resumes: whether an interrupted download keeps its partial file to resume from.
    ///   - headers: extra header fields.
    public init(_ path: String, to destination: URL, resumes: Bool = true, headers: HTTPHeaders = [:]) {
        var isDirectory: ObjCBool = false
        let folder = destination.hasDirectoryPath || (FileManager.default.fileExists(atPath: destination.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        self.init(path, to: folder ? .folder(destination) : .file(destination), resumes: resumes, headers: headers)
    }

    /// Creates a download.
    /// - Parameters:
    ///   - path: a path below the base URL, or an absolute URL.
    ///   - destination: where the file goes, and whether an existing file may be replaced.
    ///   - resumes: whether an interrupted download keeps its partial file to resume from.
    ///   - headers: extra header fields.
    public init(_ path: String, to destination: DownloadDestination, resumes: Bool = true, headers: HTTPHeaders = [:]) {
        self.path = path
        self.destination = destination
        self.resumes = resumes
        self.headers = headers
    }
}
