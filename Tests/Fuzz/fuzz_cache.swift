// Target: CachedEntry.decode(_:) and encoded() (Sources/Switchboard/Cache/CachedEntry.swift):
// the reader of cache files, which a full disk, a crash mid-write or another program can leave corrupt.
// Built with the whole module (CachedEntry names HTTPURLResponse, JSON, CachePolicy...).
// Input: first byte 0 → the rest is a cache file, read as it is; otherwise the rest describes an entry
// (text fields split at 0x1F, then the body) that is encoded, then read back.
// Checks: no trap; a file that reads as an entry encodes and reads back to the same entry; an entry
// built from any strings and bytes encodes, reads back equal, and any one byte of its file changed
// reads as a corrupt entry or as an entry (never a trap); a file cut short is corrupt.
import Foundation

private func same(_ a: CachedEntry, _ b: CachedEntry) -> Bool {
    a.key == b.key && a.url == b.url && a.statusCode == b.statusCode && a.headers == b.headers
        && a.storedAt == b.storedAt && a.expiresAt == b.expiresAt && a.version == b.version
        && a.sensitiveData == b.sensitiveData && a.appVersion == b.appVersion && a.body == b.body
}

private func roundTrip(_ entry: CachedEntry, _ context: String) -> Data? {
    guard let file = try? entry.encoded() else {
        expect("encode", false, "\(context): an entry that could not be encoded")
        return nil
    }
    switch CachedEntry.decode(file) {
    case .success(let back):
        expect("roundtrip", same(entry, back), "\(context): read back differently")
    case .failure(let error):
        expect("roundtrip", false, "\(context): its own file reads as corrupt: \(error)")
    }
    return file
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let rest = Data(bytes: data + 1, count: size - 1)
    if data[0] == 0 {
        if case .success(let entry) = CachedEntry.decode(rest) { _ = roundTrip(entry, "a file that read as an entry") }
        return 0
    }
    let fields = rest.split(separator: 0x1F, maxSplits: 5, omittingEmptySubsequences: false)
    func text(_ index: Int) -> String { index < fields.count ? String(decoding: fields[index], as: UTF8.self) : "" }
    let body = fields.count > 5 ? Data(fields[5]) : Data()
    let status = Int(data[0]) + 100
    var entry = CachedEntry(
        key: text(0), url: text(1), statusCode: status, headers: [text(2): text(3)],
        storedAt: Date(timeIntervalSince1970: Double(size)), expiresAt: Date(timeIntervalSince1970: Double(size) + 60),
        version: Int(data[0]), sensitiveData: fields.count > 4 ? text(4) : nil, appVersion: text(4)
    )
    entry.body = body
    guard let file = roundTrip(entry, "a built entry") else { return 0 }
    // One byte changed anywhere: corrupt, or an entry; never a trap.
    var damaged = file
    let at = (Int(data[0]) &* 7919 &+ size) % damaged.count
    damaged[at] ^= 0x5A
    _ = CachedEntry.decode(damaged)
    // Cut short anywhere: corrupt.
    let cut = at % max(1, file.count - 1)
    if case .success = CachedEntry.decode(file.prefix(cut)) {
        expect("truncated", false, "a file cut to \(cut) of \(file.count) bytes read as an entry")
    }
    return 0
}
