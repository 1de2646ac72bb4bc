import Foundation

/// A file of our own in a temporary directory, removed when the last reference goes away (a send's
/// assembled multipart body lives as long as the send that uploads it, retries included).
final class TemporaryFile: Sendable {
    let url: URL

    /// Creates an empty file, readable and writable by its owner only.
    /// - Throws: the file system's error.
    init(in directory: URL, prefix: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        url = directory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }

    /// Removes the file now (it is gone already if this was called before).
    func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    deinit { remove() }
}
