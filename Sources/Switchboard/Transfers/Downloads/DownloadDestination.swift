import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a download's file goes, and whether anything already there may be replaced (Alamofire's
/// `DownloadRequest.Destination`). Nothing is deleted unless the options say so.
///
/// ```swift
/// let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]
/// // One file, replaced when there:
/// let report = DownloadDestination.file(documents.appendingPathComponent("report.pdf"), options: [.removePreviousFile])
/// // A folder, the file named by the server (made safe):
/// let inbox = DownloadDestination.folder(documents.appendingPathComponent("Inbox", isDirectory: true))
/// // The app decides when the head arrives:
/// let byType = DownloadDestination(resumeKey: "attachments/7") { _, response in
///     let name = DownloadDestination.suggestedFileName(for: response)
///     let folder = response.mimeType == "application/pdf" ? "PDF" : "Other"
///     return (documents.appendingPathComponent(folder).appendingPathComponent(name), [.createIntermediateDirectories])
/// }
/// ```
///
/// What is guaranteed:
/// - The destination is chosen once per attempt, when the final response head arrives and before any
///   byte of its body is written, and checked then and again when the complete file is moved there.
/// - A file (or symbolic link) already there without ``Options/removePreviousFile`` fails the download
///   with ``DownloadError/destinationExists(_:)`` and stays untouched; the body is not received.
/// - With ``Options/removePreviousFile`` the file is replaced in one `rename(2)`: a symbolic link there
///   is itself replaced, its target never written. A directory there is never removed
///   (``DownloadError/destinationNotAllowed(_:reason:)``).
/// - A folder destination's file lies in the folder (compared after resolving symbolic links), under a
///   name that passed ``suggestedFileName(for:)``'s checks.
/// - A destination in ``Configuration/partialDownloadsDirectory`` (compared after resolving symbolic
///   links), or that is the partial file under another name (compared by device and inode), is
///   ``DownloadError/destinationNotAllowed(_:reason:)`` before any byte of the body.
public struct DownloadDestination: Sendable {
    /// What may be done at the destination.
    public struct Options: OptionSet, Sendable, Hashable {
        /// The options' bits.
        public let rawValue: Int

        /// Creates options from their raw value.
        public init(rawValue: Int) {
            self.rawValue = rawValue
        }

        /// Create the destination's folder, and the folders above it, when missing.
        public static let createIntermediateDirectories = Options(rawValue: 1 << 0)
        /// Replace a file (or a symbolic link) already at the destination. Without it, one is
        /// ``DownloadError/destinationExists(_:)``.
        public static let removePreviousFile = Options(rawValue: 1 << 1)
    }

    /// What names the download's partial file, with the request's URL: two downloads of one URL with the
    /// same key share one partial file (the second resumes what the first left) and never run at once.
    /// It is fixed before the response (the final file may be chosen only when the head comes).
    public let resumeKey: String

    /// Chooses the file; user code, called without any lock held.
    let choose: @Sendable (_ temporaryURL: URL, _ response: HTTPURLResponse) throws -> (URL, Options)

    /// For ``folder(_:options:)``: the folder the file must lie in.
    let folder: URL?

    /// A destination the app chooses when the response head arrives.
    ///
    /// - Parameters:
    ///   - resumeKey: names the partial file with the request's URL (see ``resumeKey``); keep it stable
    ///     across launches for a download to resume after a relaunch.
    ///   - destination: called once per attempt, when the final response head arrives (before any byte
    ///     of its body is written), on the transport's callback queue: keep it short and don't block.
    ///     `temporaryURL` is the partial file that receives the body; `response` the head (a `200`, a
    ///     `206` of a resumed download, or a `416` that says the partial file is already whole). Return
    ///     a file URL and the options. Throwing fails the download with
    ///     ``DownloadError/destinationThrew(reason:)``.
    public init(resumeKey: String, _ destination: @escaping @Sendable (_ temporaryURL: URL, _ response: HTTPURLResponse) throws -> (URL, Options)) {
        self.init(resumeKey: resumeKey, folder: nil, choose: destination)
    }

    private init(resumeKey: String, folder: URL?, choose: @escaping @Sendable (URL, HTTPURLResponse) throws -> (URL, Options)) {
        self.resumeKey = resumeKey
        self.folder = folder
        self.choose = choose
    }

    /// The file at `url`. Its resume key is its path, with the home directory written as `~` (an iOS
    /// app's container moves between launches).
    /// - Parameters:
    ///   - url: a file URL.
    ///   - options: by default its folder is created and an existing file is an error.
    public static func file(_ url: URL, options: Options = [.createIntermediateDirectories]) -> DownloadDestination {
        let file = url.standardizedFileURL
        return DownloadDestination(resumeKey: PartialDownload.portablePath(file.path), folder: nil) { _, _ in (file, options) }
    }

    /// A file in the folder at `url`, named by ``suggestedFileName(for:)``: the server's
    /// `Content-Disposition` name, else the URL's last path component, when safe, else `download`. Its
    /// resume key is the folder's path (home as `~`) and a `/`.
    /// - Parameters:
    ///   - url: a folder's file URL.
    ///   - options: by default the folder is created and an existing file is an error.
    public static func folder(_ url: URL, options: Options = [.createIntermediateDirectories]) -> DownloadDestination {
        let folder = url.standardizedFileURL
        return DownloadDestination(resumeKey: PartialDownload.portablePath(folder.path) + "/", folder: folder) { _, response in
            (folder.appendingPathComponent(DownloadFileName.name(for: response), isDirectory: false), options)
        }
    }

    /// A safe file name for `response`'s body: its `Content-Disposition` name (`filename*=UTF-8''…`
    /// before `filename=`), else the last path component of the URL that answered, else `download`.
    /// A name is safe when it is not empty, its first byte is not `.` (so not `.`, `..`, a hidden file,
    /// or a dot followed by a combining mark), it has at most 255 bytes of UTF-8, and none of its
    /// Unicode scalars is `/`, `\`, NUL, a C0 or C1 control character, DEL, a format character
    /// (general category Cf: the bidirectional controls and invisible characters such as U+200B,
    /// U+2060 and U+FEFF) or a line or paragraph separator (U+2028, U+2029).
    public static func suggestedFileName(for response: HTTPURLResponse) -> String {
        DownloadFileName.name(for: response)
    }
}
