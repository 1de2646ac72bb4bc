import Foundation

/// Why a download failed although the server answered: the destination refused the file, a resume
/// could not be trusted, or the file came out at another length than the server said. Carried by
/// ``NetworkError/download(_:)``.
public enum DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A file, or a symbolic link, is already at the destination and its ``DownloadDestination/Options``
    /// lack ``DownloadDestination/Options/removePreviousFile``. It is left untouched; no byte of the body
    /// was received.
    case destinationExists(URL)
    /// The destination can't be used: a directory is there, its folder is missing (without
    /// ``DownloadDestination/Options/createIntermediateDirectories``), a folder destination's file would
    /// land outside the folder or under an unsafe name, it lies in
    /// ``Configuration/partialDownloadsDirectory`` or is the partial file itself, or the URL is not a
    /// file URL; or the move into place failed. `reason` says which. Checked when the head arrives,
    /// before any byte of the body, and again at the move.
    case destinationNotAllowed(URL, reason: String)
    /// The ``DownloadDestination`` closure threw; `reason` describes its error.
    case destinationThrew(reason: String)
    /// A resume was answered in a way that can't be appended to the partial file (no validator, or one
    /// that changed; a `Content-Range` that starts elsewhere, names another or an unknown complete length;
    /// a `416` that doesn't confirm the file), and the restart from byte 0 was answered so too.
    case unusableResume(reason: String)
    /// The file received has `received` bytes, the server said `expected`. Nothing was moved into place.
    case lengthMismatch(expected: Int64, received: Int64)

    /// One line for logs.
    public var description: String {
        switch self {
        case .destinationExists(let url): "a file is already at \(url.path)"
        case .destinationNotAllowed(let url, let reason): "cannot download to \(url.path): \(reason)"
        case .destinationThrew(let reason): "the download's destination threw: \(reason)"
        case .unusableResume(let reason): "the download could not be resumed or restarted: \(reason)"
        case .lengthMismatch(let expected, let received): "the download has \(received) bytes, the server said \(expected)"
        }
    }
}
