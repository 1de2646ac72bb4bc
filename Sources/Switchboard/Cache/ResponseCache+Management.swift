import Dispatch
import Foundation

/// Emptying, expiring, measuring and versioning the cache.
extension ResponseCache {
    /// Removes every entry, in memory and on disk.
    public func removeAll() {
        state.withLock { memory in
            memory.entries = [:]
            memory.bytes = 0
            memory.removed.formUnion(memory.files.keys)
            memory.generation += 1
        }
        guard mayHaveDiskTier else { return }
        // The files as the disk queue sees them: writes asked for before this are among them.
        disk.async { [self] in
            guard let directory = diskDirectoryOnQueue() else { return }
            for name in state.withLock({ Array($0.files.keys) }) { deleteFile(name, in: directory) }
        }
    }

    /// Removes the entries whose time to live has passed.
    public func removeExpired(now: Date = Date()) {
        state.withLock { memory in
            let keys = memory.entries.filter { !$0.value.entry.isFresh(at: now) }.map(\.key)
            for key in keys { memory.bytes -= memory.entries.removeValue(forKey: key)?.entry.size ?? 0 }
        }
        guard mayHaveDiskTier else { return }
        disk.async { [self] in
            guard let directory = diskDirectoryOnQueue() else { return }
            let names = state.withLock { Array($0.files.keys) }
            for name in names {
                guard let data = try? Data(contentsOf: directory.appendingPathComponent(name)) else { continue }
                if case .success(let entry) = CachedEntry.decode(data), entry.isFresh(at: now) { continue }
                deleteFile(name, in: directory)
            }
        }
    }

    /// The bytes the cache keeps: on disk when it has a directory, else in memory.
    public var totalSize: Int {
        let onDisk = disk.sync { diskDirectoryOnQueue() != nil }
        return state.withLock { onDisk ? $0.diskBytes : $0.bytes }
    }

    /// The number of entries in memory.
    public var memoryCount: Int { state.withLock { $0.entries.count } }

    /// Removes everything when `version` differs from the one given last time (kept in the
    /// directory), and remembers it: call it at launch with the app's version.
    /// - Returns: whether the cache was cleared.
    @discardableResult
    public func clearIfVersionChanged(_ version: String) -> Bool {
        guard let directory = disk.sync(execute: { diskDirectoryOnQueue() }) else { return false }
        let marker = directory.appendingPathComponent("version")
        let stored = (try? String(contentsOf: marker, encoding: .utf8)) ?? ""
        guard stored != version else { return false }
        removeAll()
        flush()
        try? Data(version.utf8).write(to: marker, options: .atomic)
        return !stored.isEmpty
    }
}
