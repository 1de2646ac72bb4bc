import Foundation

/// Where one download keeps its bytes until they are complete, and what it needs to resume: the
/// partial file and a small JSON record beside it (the URL and resume key it belongs to, and the
/// server's validator). Both are named by a stable hash of the request's URL and the destination's
/// ``DownloadDestination/resumeKey``, known before the response (the final file may be chosen only
/// when the head comes), so the names survive an app relaunch that moves its container.
package struct PartialDownload: Sendable {
    /// Which validator a record holds: what `If-Range` carried and a `206` must repeat.
    package enum ValidatorKind: String, Codable, Sendable {
        /// A strong `ETag`.
        case etag
        /// A `Last-Modified` date at least 60 s older than its response's `Date`.
        case lastModified
    }

    /// What is stored beside the partial file.
    package struct Record: Codable, Equatable, Sendable {
        /// The URL and resume key this belongs to (compared on read: a hash collision is a miss).
        package var key: String
        /// The strong `ETag`, or else the `Last-Modified`, the bytes were sent with: `If-Range` on resume.
        package var validator: String
        /// Which of the two ``validator`` is.
        package var kind: ValidatorKind
        /// The whole file's size, when the server said.
        package var totalLength: Int64?

        package init(key: String, validator: String, kind: ValidatorKind, totalLength: Int64?) {
            self.key = key
            self.validator = validator
            self.kind = kind
            self.totalLength = totalLength
        }
    }

    package let key: String
    /// The partial file.
    package let file: URL
    /// The record.
    let recordFile: URL

    /// The partial download of `url` under `resumeKey` (see ``DownloadDestination/resumeKey``).
    package init(url: URL, resumeKey: String, directory: URL) {
        key = url.absoluteString + "\n" + resumeKey
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

    /// Stores the record: only once the partial file holds nothing but bytes of the version it names
    /// (none yet, or the start of that version), and before the body's bytes are written.
    package func save(_ record: Record) throws {
        try FileManager.default.createDirectory(at: recordFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONEncoder().encode(record).write(to: recordFile, options: .atomic)
    }

    /// Removes the record only (the bytes can't be resumed without it).
    func forgetRecord() {
        try? FileManager.default.removeItem(at: recordFile)
    }

    /// Empties the partial file (there or not); `false` when it can't be.
    func empty() -> Bool {
        guard FileManager.default.fileExists(atPath: file.path) else { return true }
        guard let handle = try? FileHandle(forWritingTo: file) else { return false }
        defer { try? handle.close() }
        return (try? handle.truncate(atOffset: 0)) != nil
    }

    /// Removes the partial file and its record.
    func discard() {
        try? FileManager.default.removeItem(at: file)
        try? FileManager.default.removeItem(at: recordFile)
    }

    /// The partial file's size (0 when there is none).
    func size() -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The downloads running now, by key: one at a time per URL and resume key.
    /// Locked: every download in the process claims and releases here, from whatever thread its attempt runs on.
    private static let running = Locked(Set<String>())

    /// Claims this download; `false` when another one of the same URL and resume key runs.
    func claim() -> Bool { Self.running.withLock { $0.insert(key).inserted } }

    /// Ends the claim.
    func release() { _ = Self.running.withLock { $0.remove(key) } }
}
