import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where one attempt's complete file goes, as its ``DownloadDestination`` chose when the head came:
/// checked then, and again at the move, which never follows a symbolic link at the destination and
/// replaces nothing unless ``DownloadDestination/Options/removePreviousFile`` says so.
struct DownloadPlacement: Sendable {
    /// The file, as the destination named it (what ``Response/fileURL`` is).
    let file: URL
    let options: DownloadDestination.Options
    /// The file's folder with every symbolic link resolved: where the move happens.
    let resolvedFolder: String
    /// The file's name in it (no `/`).
    let name: String
    /// The partial file that receives the body: never the destination, whatever its name.
    let partial: URL

    /// Asks `destination` for the file (user code: call it without a lock held) and checks the answer.
    static func choose(_ destination: DownloadDestination, temporaryURL: URL, response: HTTPURLResponse) throws(DownloadError) -> DownloadPlacement {
        let chosen: (URL, DownloadDestination.Options)
        do {
            chosen = try destination.choose(temporaryURL, response)
        } catch {
            throw .destinationThrew(reason: "\(error)")
        }
        let (url, options) = (chosen.0.standardizedFileURL, chosen.1)
        let name = url.lastPathComponent
        guard url.isFileURL, !name.isEmpty, name != "/", name != ".", name != ".." else {
            throw .destinationNotAllowed(url, reason: "not a file URL with a file name")
        }
        let folder = url.deletingLastPathComponent()
        if options.contains(.createIntermediateDirectories) {
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw .destinationNotAllowed(url, reason: "its folder can't be created: \(error)")
            }
        }
        guard let resolved = realPath(folder.path) else { throw .destinationNotAllowed(url, reason: "its folder doesn't exist") }
        if let required = destination.folder {
            guard let inside = realPath(required.path), inside == resolved, DownloadFileName.safe(name) != nil else {
                throw .destinationNotAllowed(url, reason: "it is not a file with a safe name directly in \(required.path)")
            }
        }
        // The partial-downloads folder is the library's own: a file put there (the partial file, its
        // record, another download's) would be removed or overwritten by a later download.
        if realPath(temporaryURL.deletingLastPathComponent().path) == resolved {
            throw .destinationNotAllowed(url, reason: "it is in the partial-downloads folder")
        }
        let placement = DownloadPlacement(file: url, options: options, resolvedFolder: resolved, name: name, partial: temporaryURL)
        try placement.withFolder { _ in }
        return placement
    }

    /// Moves the complete file at `partial` into place: with ``DownloadDestination/Options/removePreviousFile``
    /// by `rename(2)` (a link there is replaced, not followed), otherwise by `link(2)` and `unlink(2)`,
    /// which fail when anything is there. Across file systems, the bytes are copied into a file made
    /// with `O_CREAT | O_EXCL | O_NOFOLLOW`.
    func move(from partial: URL) throws(DownloadError) {
        try withFolder { folder throws(DownloadError) in
            if options.contains(.removePreviousFile) {
                if renameat(AT_FDCWD, partial.path, folder, name) == 0 { return }
                guard errno == EXDEV else { throw moveFailed(errno) }
                // Copied beside the destination under a name of our own, then renamed over it.
                // A short fixed form: a name of 255 bytes is legal, the same with a prefix and suffix isn't.
                let temporary = ".switchboard-\(UUID().uuidString).partial"
                try copy(partial, into: folder, name: temporary)
                if renameat(folder, temporary, folder, name) != 0 {
                    let code = errno
                    unlinkat(folder, temporary, 0)
                    throw moveFailed(code)
                }
            } else {
                if linkat(AT_FDCWD, partial.path, folder, name, 0) != 0 {
                    switch errno {
                    case EEXIST: throw .destinationExists(file)
                    case EXDEV, EPERM, ENOTSUP, EMLINK, EOPNOTSUPP: try copy(partial, into: folder, name: name)  // no hard link here
                    case let code: throw moveFailed(code)
                    }
                }
            }
            unlink(partial.path)
        }
    }

    /// Runs `body` with the resolved folder open, after checking that the file's folder still resolves
    /// to it and that what is at the destination may be replaced: not a directory, not the partial file
    /// (compared by device and inode, so neither a hard link nor a case-insensitive volume's other
    /// spelling of its name can alias them), and only with ``DownloadDestination/Options/removePreviousFile``.
    private func withFolder(_ body: (Int32) throws(DownloadError) -> Void) throws(DownloadError) {
        guard Self.realPath(file.deletingLastPathComponent().path) == resolvedFolder else {
            throw .destinationNotAllowed(file, reason: "its folder changed since the download started")
        }
        let folder = open(resolvedFolder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else { throw .destinationNotAllowed(file, reason: "its folder can't be opened: \(String(cString: strerror(errno)))") }
        defer { close(folder) }
        var info = stat()
        if fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { throw .destinationNotAllowed(file, reason: "a directory is there") }
            var partialInfo = stat()
            if lstat(partial.path, &partialInfo) == 0, partialInfo.st_dev == info.st_dev, partialInfo.st_ino == info.st_ino {
                throw .destinationNotAllowed(file, reason: "it is the partial file itself")
            }
            if !options.contains(.removePreviousFile) { throw .destinationExists(file) }
        } else if errno != ENOENT {
            throw .destinationNotAllowed(file, reason: String(cString: strerror(errno)))
        }
        try body(folder)
    }

    /// Copies `source` into a new file `name` in `folder` (never an existing file or a link).
    private func copy(_ source: URL, into folder: Int32, name: String) throws(DownloadError) {
        let output = openat(folder, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw errno == EEXIST ? .destinationExists(file) : moveFailed(errno) }
        var failure: Int32?
        let input = open(source.path, O_RDONLY | O_CLOEXEC)
        if input < 0 { failure = errno }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while failure == nil {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno != EINTR { failure = errno }
                continue
            }
            var written = 0
            while written < count, failure == nil {
                let step = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, count - written) }
                if step < 0 {
                    if errno != EINTR { failure = errno }
                } else {
                    written += step
                }
            }
        }
        if input >= 0 { close(input) }
        if close(output) != 0, failure == nil { failure = errno }
        if let failure {
            unlinkat(folder, name, 0)
            throw moveFailed(failure)
        }
    }

    private func moveFailed(_ code: Int32) -> DownloadError {
        .destinationNotAllowed(file, reason: "the file can't be moved there: \(String(cString: strerror(code)))")
    }

    /// `path` with every symbolic link resolved, or `nil` when it doesn't exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
