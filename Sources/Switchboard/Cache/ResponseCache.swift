import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Switchboard's response cache: a memory tier over a disk tier, used by requests with a
/// ``Request/cachePolicy`` when it is ``Configuration/cache``. (URLSession's own cache is never
/// written on Linux; this one behaves the same everywhere.)
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.cache = ResponseCache(directory: cachesFolder) }   // or the default, `.shared`
/// ```
///
/// - The memory tier keeps the most recently used entries, up to a count and a size.
/// - The disk tier keeps one file per entry in its directory, named by a hash of the key, owner-only
///   (0600), written atomically (a temporary file renamed over the old one) on a queue of its own; an
///   entry is readable from memory as soon as it is stored. A total size limit evicts the least
///   recently used files.
/// - A truncated, corrupt or foreign file, or one whose stored key differs, is a miss: it is deleted
///   and logged. A directory that can't be written leaves the cache in memory only, with a logged
///   warning.
public final class ResponseCache: Sendable {
    struct Memory {
        var entries: [String: (entry: CachedEntry, lastUse: UInt64)] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        /// Files on disk by name: size and last use (for eviction and the total size).
        var files: [String: (size: Int, lastUse: UInt64)] = [:]
        var diskBytes = 0
        /// Files asked to be deleted and not yet gone: not read meanwhile.
        var removed: Set<String> = []
        /// Counts ``removeAll()``s: a disk read begun before one keeps nothing.
        var generation: UInt64 = 0
    }

    /// The folder asked for (the disk tier's, unless it can't be written).
    public let requestedDirectory: URL?
    /// The disk tier's folder, checked (created, written to) and scanned on first use, on the cache's
    /// queue (this waits for it); `nil` when the cache is in memory only.
    public var directory: URL? { disk.sync { diskDirectoryOnQueue() } }
    /// The most entries the memory tier keeps.
    public let memoryCountLimit: Int
    /// The most bytes the memory tier keeps.
    public let memoryByteLimit: Int
    /// The most bytes the disk tier keeps.
    public let diskByteLimit: Int
    private let logger: (any NetworkLogger)?
    /// Locked: the memory tier and the disk bookkeeping, shared by senders (look-ups, stores) on any thread and the disk queue.
    let state = Locked(Memory())
    /// The disk tier once checked: `.none` before, `.some(nil)` for memory only.
    /// Locked: written on the disk queue, read by senders on any thread (``mayHaveDiskTier``).
    private let checkedDirectory = Locked<URL??>(.none)
    let disk = DispatchQueue(label: "switchboard.cache.disk")

    /// Creates a cache.
    /// - Parameters:
    ///   - directory: the disk tier's folder (created if missing); `nil` for memory only.
    ///   - memoryCountLimit: entries kept in memory (default 200).
    ///   - memoryByteLimit: bytes kept in memory (default 16 MiB).
    ///   - diskByteLimit: bytes kept on disk (default 128 MiB).
    ///   - logger: where a corrupt file or an unwritable directory is reported (default: the console).
    public init(directory: URL?, memoryCountLimit: Int = 200, memoryByteLimit: Int = 16 << 20, diskByteLimit: Int = 128 << 20, logger: (any NetworkLogger)? = ConsoleLogger()) {
        self.memoryCountLimit = max(1, memoryCountLimit)
        self.memoryByteLimit = max(1, memoryByteLimit)
        self.diskByteLimit = max(1, diskByteLimit)
        self.logger = logger
        requestedDirectory = directory
    }

    /// The caches folder's `Switchboard/Responses`: ``Configuration/cache``'s default, touched only
    /// when a request with a ``Request/cachePolicy`` uses it.
    public static let shared = ResponseCache(
        directory: FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first?
            .appendingPathComponent("Switchboard/Responses", isDirectory: true))

    /// The disk tier's folder, checked and scanned the first time. Only on the disk queue: the file work
    /// is done there, never on a sender's thread, and without holding a lock others wait on.
    func diskDirectoryOnQueue() -> URL? {
        if let done = checkedDirectory.withLock({ $0 }) { return done }
        var usable: URL?
        if let requested = requestedDirectory {
            do {
                try Self.check(requested)
                usable = requested
                var diskBytes = 0
                let files = Self.scan(requested, diskBytes: &diskBytes)
                state.withLock { memory in
                    // Files written meanwhile are already counted; the scan adds the others.
                    for (name, file) in files where memory.files[name] == nil {
                        memory.files[name] = file
                        memory.diskBytes += file.size
                    }
                }
            } catch {
                // The logger is the app's code: called with no lock held.
                report("response cache: \(requested.path) can't be written (\(error)); caching in memory only")
            }
        }
        checkedDirectory.withLock { $0 = .some(usable) }
        return usable
    }

    /// Whether entries may be on disk: a folder was asked for and not found unwritable.
    var mayHaveDiskTier: Bool {
        guard requestedDirectory != nil else { return false }
        return checkedDirectory.withLock { $0 }.map { $0 != nil } ?? true
    }

    /// Creates `directory` if missing and writes a file in it; throws when it can't.
    private static func check(_ directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let probe = directory.appendingPathComponent(".probe-\(UUID().uuidString)")
        try Data().write(to: probe)
        try FileManager.default.removeItem(at: probe)
    }

    private static func scan(_ directory: URL, diskBytes: inout Int) -> [String: (size: Int, lastUse: UInt64)] {
        var files: [String: (size: Int, lastUse: UInt64)] = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasSuffix(".cache") {
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
            let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            files[name] = (size, UInt64(max(0, modified * 1000)))
            diskBytes += size
        }
        return files
    }

    // MARK: Entries

    /// Where ``lookUp(_:)`` found the entry for a key.
    enum Found {
        /// In memory (or nowhere, `nil`, when there is no disk tier to look in): the answer, at once.
        case now(CachedEntry?)
        /// Maybe on disk: ``read(_:generation:)`` reads it.
        case onDisk(generation: UInt64)
    }

    /// The entry for `key` if memory holds it, or where on disk to read it.
    func lookUp(_ key: String) -> Found {
        if let hit = memoryEntry(for: key) { return .now(hit) }
        guard mayHaveDiskTier else { return .now(nil) }
        let generation = state.withLock { memory -> UInt64? in memory.removed.contains(Self.fileName(for: key)) ? nil : memory.generation }
        guard let generation else { return .now(nil) }
        return .onDisk(generation: generation)
    }

    /// The entry in `key`'s file, read and checked on the cache's queue (the file read and its checksum
    /// never on the caller's thread), then kept in memory too. The caller resumes off that queue.
    func read(_ key: String, generation: UInt64) async -> CachedEntry? {
        await withCheckedContinuation { continuation in
            disk.async { [self] in continuation.resume(returning: readFromDisk(key, generation: generation)) }
        }
    }

    /// The entry for `key`, waiting for the disk when it isn't in memory: for
    /// ``Dispatcher/cachedResponse(for:allowingExpired:)``, a call that reads the store by design.
    func entry(for key: String) -> CachedEntry? {
        if let hit = memoryEntry(for: key) { return hit }
        guard mayHaveDiskTier else { return nil }
        let generation = state.withLock { $0.generation }
        return disk.sync { readFromDisk(key, generation: generation) }
    }

    private func memoryEntry(for key: String) -> CachedEntry? {
        state.withLock { memory -> CachedEntry? in
            // One hash of the key, not two (a lookup, then a write through the subscript).
            guard let index = memory.entries.index(forKey: key) else { return nil }
            memory.clock += 1
            memory.entries.values[index].lastUse = memory.clock
            return memory.entries.values[index].entry
        }
    }

    /// Holds back every read from disk while it runs (on the cache's queue): the package's tests use
    /// it to show that a send doesn't wait for the disk.
    /// Locked: set by a test on its own thread, read on the disk queue.
    package let diskReadGate = Locked<(@Sendable () -> Void)?>(nil)
    /// Runs (on the cache's queue) after a disk read has decoded its entry, before the entry is kept
    /// in memory: the package's tests store a newer entry there.
    /// Locked: set by a test on its own thread, read on the disk queue.
    package let diskReadDecodedGate = Locked<(@Sendable () -> Void)?>(nil)
    /// How many lookups answered in a task have been handled (disk reads, and a typed request's memory
    /// hits): for the package's tests, which wait for a late answer before checking it changed nothing.
    /// Locked: counted by each send's task after it handled a disk read (any thread), read by tests.
    package let answeredLookUps = Locked(0)

    /// On the disk queue: the entry in `key`'s file, checked; a corrupt or foreign file is deleted.
    /// Nothing is kept, and `nil` returned, when the cache was cleared (a new `generation`) or the entry
    /// removed since the read was asked for; a newer entry stored meanwhile is returned instead.
    private func readFromDisk(_ key: String, generation: UInt64) -> CachedEntry? {
        diskReadGate.withLock { $0 }?()
        guard let directory = diskDirectoryOnQueue() else { return nil }
        let name = Self.fileName(for: key)
        // Looked at again: a removal asked for since the read was queued.
        if let hit = memoryEntry(for: key) { return hit }
        if state.withLock({ $0.removed.contains(name) }) { return nil }
        guard let data = try? Data(contentsOf: directory.appendingPathComponent(name)) else { return nil }
        switch CachedEntry.decode(data) {
        case .success(let entry) where entry.key == key:
            guard entry.isCurrentFormat else {
                drop(name, in: directory, because: "it was stored by an earlier version (its Vary fields weren't kept)")
                return nil
            }
            diskReadDecodedGate.withLock { $0 }?()
            return rememberRead(entry, name: name, generation: generation)
        case .success:
            drop(name, in: directory, because: "it holds another key (a hash collision)")
        case .failure(let corrupt):
            drop(name, in: directory, because: corrupt.description)
        }
        return nil
    }

    /// Keeps `head` and `json`, made from `entry` when it was read from disk, with the entry in memory
    /// (unless another replaced it meanwhile): later hits from memory don't parse the body again.
    func rememberDecoded(_ entry: CachedEntry, head: HTTPURLResponse, json: JSON) {
        var decoded = entry
        decoded.decoded = CachedEntry.Decoded(head: head, json: json)
        state.withLock { memory in
            guard let current = memory.entries[entry.key], current.entry.decoded == nil, current.entry.storedAt == entry.storedAt else { return }
            memory.entries[entry.key]?.entry = decoded
        }
    }

    /// Stores `entry`: in memory at once, on disk on the cache's queue.
    func store(_ entry: CachedEntry) {
        remember(entry)
        let name = Self.fileName(for: entry.key)
        _ = state.withLock { $0.removed.remove(name) }
        guard mayHaveDiskTier else { return }
        disk.async { [self] in
            guard let directory = diskDirectoryOnQueue() else { return }
            write(entry, in: directory)
        }
    }

    /// Removes the entry for `key` (memory and disk).
    func remove(key: String) {
        let name = Self.fileName(for: key)
        state.withLock { memory in
            if let old = memory.entries.removeValue(forKey: key) { memory.bytes -= old.entry.size }
            memory.removed.insert(name)
        }
        guard mayHaveDiskTier else {
            _ = state.withLock { $0.removed.remove(name) }
            return
        }
        disk.async { [self] in
            if let directory = diskDirectoryOnQueue() {
                deleteFile(name, in: directory)
            } else {
                _ = state.withLock { $0.removed.remove(name) }
            }
        }
    }

    /// Waits until every disk write and removal asked for so far is done.
    public func flush() {
        disk.sync {}
    }

    /// Keeps an entry read from disk, unless it was removed or cleared meanwhile, or a newer one was
    /// stored meanwhile (which is returned instead).
    private func rememberRead(_ entry: CachedEntry, name: String, generation: UInt64) -> CachedEntry? {
        let current = state.withLock { memory -> CachedEntry?? in
            guard memory.generation == generation, !memory.removed.contains(name) else { return .some(nil) }
            memory.clock += 1
            memory.files[name]?.lastUse = memory.clock
            if let newer = memory.entries[entry.key]?.entry, newer.storedAt >= entry.storedAt { return .some(newer) }
            return .none
        }
        if let current { return current }
        remember(entry)
        return entry
    }

    private func remember(_ entry: CachedEntry) {
        state.withLock { memory in
            if let old = memory.entries[entry.key] { memory.bytes -= old.entry.size }
            memory.clock += 1
            memory.entries[entry.key] = (entry, memory.clock)
            memory.bytes += entry.size
            // The least recently used go first; the entry just stored stays, however large.
            while memory.entries.count > memoryCountLimit || memory.bytes > memoryByteLimit, memory.entries.count > 1,
                let oldest = memory.entries.filter({ $0.key != entry.key }).min(by: { $0.value.lastUse < $1.value.lastUse })
            {
                memory.entries.removeValue(forKey: oldest.key)
                memory.bytes -= oldest.value.entry.size
            }
        }
    }

    /// On the disk queue: writes a temporary file (0600) and renames it over the entry's file, then
    /// evicts the least recently used files over the limit.
    private func write(_ entry: CachedEntry, in directory: URL) {
        let name = Self.fileName(for: entry.key)
        let target = directory.appendingPathComponent(name)
        let temporary = directory.appendingPathComponent(".\(name).\(UUID().uuidString).tmp")
        do {
            let data = try entry.encoded()
            guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
            guard rename(temporary.path, target.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
            let evict = state.withLock { memory -> [String] in
                memory.diskBytes -= memory.files[name]?.size ?? 0
                memory.clock += 1
                memory.files[name] = (data.count, memory.clock)
                memory.diskBytes += data.count
                var evicted: [String] = []
                while memory.diskBytes > diskByteLimit, memory.files.count > 1,
                    let oldest = memory.files.filter({ $0.key != name }).min(by: { $0.value.lastUse < $1.value.lastUse })
                {
                    memory.files.removeValue(forKey: oldest.key)
                    memory.diskBytes -= oldest.value.size
                    evicted.append(oldest.key)
                }
                return evicted
            }
            for old in evict { try? FileManager.default.removeItem(at: directory.appendingPathComponent(old)) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            report("response cache: could not write \(target.path): \(error)")
        }
    }

    /// On the disk queue: deletes an unusable file and says so.
    private func drop(_ name: String, in directory: URL, because reason: String) {
        deleteFile(name, in: directory)
        report("response cache: \(name) is not a usable entry (\(reason)); deleted, the request goes to the network")
    }

    /// Tells the logger (the app's code) from a global queue: never from the disk queue, where a logger
    /// that asked the cache anything (`totalSize` waits for that queue) would wait for itself.
    private func report(_ message: String) {
        guard let logger else { return }
        WorkerQueue.async { logger.log(LogRecord(level: .error, requestID: 0, message: message)) }
    }

    func deleteFile(_ name: String, in directory: URL) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        state.withLock { memory in
            if let old = memory.files.removeValue(forKey: name) { memory.diskBytes -= old.size }
            memory.removed.remove(name)
        }
    }

    static func fileName(for key: String) -> String { StableHash.hex(key) + ".cache" }
}
