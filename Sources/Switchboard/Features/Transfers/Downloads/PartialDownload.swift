import Foundation

/// Where one download keeps its bytes until they are complete, and what it needs to resume: the
/// partial file and a small JSON record beside it (the URL and destination it belongs to, and the
/// server's validator). Both are named by a stable hash of the URL and the destination, with the home
/// directory written as `~`, so the names survive an app relaunch that moves its container.
package struct PartialDownload: Sendable {
    /// What is stored beside the partial file.
    package struct Record: Codable, Equatable {
        /// The URL and destination this belongs to (compared on read: a hash collision is a miss).
        package var key: String
        /// The `ETag` (preferred) or `Last-Modified` the bytes were sent with: `If-Range` on resume.
        package var validator: String
        /// The whole file's size, when the server said.
        package var totalLength: Int64?

        package init(key: String, validator: String, totalLength: Int64?) {
            self.key = key
            self.validator = validator
            self.totalLength = totalLength
        }
    }

    package let key: String
    /// The partial file.
    package let file: URL
    /// The record.
    let recordFile: URL
    /// The final file.
    let destination: URL

    /// The partial download of `url` into `destination` (a directory gets the URL's last path component).
    package init(url: URL, destination: URL, directory: URL) {
        var destination = destination.standardizedFileURL
        var isDirectory: ObjCBool = false
        if destination.hasDirectoryPath || (FileManager.default.fileExists(atPath: destination.path, isDirectory: &isDirectory) && isDirectory.boolValue) {
            let name = url.lastPathComponent
            destination = destination.appendingPathComponent(name.isEmpty || name == "/" ? "download" : name)
        }
        self.destination = destination
        key = url.absoluteString + "\n" + Self.portablePath(destination.path)
        let name = StableHash.hex(key)
        file = directory.appendingPathComponent(name + ".partial")
        recordFile = directory.appendingPathComponent(name + ".json")
    }

    /// `path` with the home directory as `~`.
    package static func portablePath(_ path: String) -> String {
        let home = NSHomeDirectory()
        guard !home.isEmpty, home != "/", path.hasPrefix(home + "/") else { return path }
        return "~" + path.dropFirst(home.count)
    }

    /// Where to resume from: the partial file's size and its record, when both are there and belong
    /// to this download; otherwise `nil`, and whatever was there is removed.
    func resumePoint() -> (offset: Int64, record: Record)? {
        guard let data = try? Data(contentsOf: recordFile),
            let record = try? JSONDecoder().decode(Record.self, from: data), record.key == key,
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value,
            size > 0, record.totalLength.map({ size <= $0 }) ?? true
        else {
            discard()
            return nil
        }
        return (size, record)
    }

    /// Stores the record (before the body's bytes are written, so they never lack one).
    package func save(_ record: Record) throws {
        try FileManager.default.createDirectory(at: recordFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONEncoder().encode(record).write(to: recordFile, options: .atomic)
    }

    /// Removes the record only (the bytes can't be resumed without it).
    func forgetRecord() {
        try? FileManager.default.removeItem(at: recordFile)
    }

    /// Removes the partial file and its record.
    func discard() {
        try? FileManager.default.removeItem(at: file)
        try? FileManager.default.removeItem(at: recordFile)
    }

    /// Moves the complete file to the destination (replacing what is there) and removes the record.
    func complete() throws {
        let manager = FileManager.default
        try manager.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        if manager.fileExists(atPath: destination.path) { try manager.removeItem(at: destination) }
        try manager.moveItem(at: file, to: destination)
        forgetRecord()
    }

    /// The downloads running now, by key: one at a time per URL and destination.
    private static let running = Locked(Set<String>())

    /// Claims this download; `false` when another one of the same URL and destination runs.
    func claim() -> Bool { Self.running.withLock { $0.insert(key).inserted } }

    /// Ends the claim.
    func release() { _ = Self.running.withLock { $0.remove(key) } }
}
