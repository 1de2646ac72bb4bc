import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One stored response, as the cache keeps it in memory and on disk.
///
/// A value whose fields live in one immutable object: a hit copies the entry several times on its
/// way to delivery, and one reference is cheaper to copy than ten. A setter makes a new object: fields
/// are set rarely (the memory tier's `rememberDecoded`), never in place.
struct CachedEntry: Sendable, Codable {
    private var fields: Fields

    /// The whole key (compared on read: a file name's hash collision is a miss).
    var key: String { fields.values.key }
    var url: String { fields.values.url }
    var statusCode: Int { fields.values.statusCode }
    var headers: [String: String] { fields.values.headers }
    var storedAt: Date { fields.values.storedAt }
    var expiresAt: Date { fields.values.expiresAt }
    var version: Int { fields.values.version }
    var sensitiveData: String? { fields.values.sensitiveData }
    var appVersion: String { fields.values.appVersion }
    /// The request fields the response's `Vary` named, with the values the storing request had
    /// (RFC 9111 §4.1); `nil` when it named none.
    var vary: [VaryField]? {
        get { fields.values.vary }
        set { fields = fields.with { $0.vary = newValue } }
    }
    /// The body (not encoded in the file's header; it follows it).
    var body: Data {
        get { fields.values.body }
        set { fields = fields.with { $0.body = newValue } }
    }
    /// The response head and JSON this entry was stored from (memory only): a hit from memory
    /// skips rebuilding the head and parsing the body again.
    var decoded: Decoded? {
        get { fields.values.decoded }
        set { fields = fields.with { $0.decoded = newValue } }
    }

    init(
        key: String, url: String, statusCode: Int, headers: [String: String], storedAt: Date, expiresAt: Date, version: Int, sensitiveData: String?,
        appVersion: String, vary: [VaryField]? = nil, body: Data = Data(), decoded: Decoded? = nil
    ) {
        fields = Fields(
            Fields.Values(
                key: key, url: url, statusCode: statusCode, headers: headers, storedAt: storedAt, expiresAt: expiresAt, version: version,
                sensitiveData: sensitiveData, appVersion: appVersion, vary: vary, body: body, decoded: decoded))
    }

    /// The entry's fields, never changed once made (so `Sendable` without a lock).
    private final class Fields: Sendable {
        struct Values: Codable, Sendable {
            var key: String
            var url: String
            var statusCode: Int
            var headers: [String: String]
            var storedAt: Date
            var expiresAt: Date
            var version: Int
            var sensitiveData: String?
            var appVersion: String
            var vary: [VaryField]?
            var body = Data()
            var decoded: Decoded?

            private enum CodingKeys: String, CodingKey {
                case key, url, statusCode, headers, storedAt, expiresAt, version, sensitiveData, appVersion, vary
            }
        }

        let values: Values
        init(_ values: Values) { self.values = values }

        /// A new object with `change` applied to a copy of the values.
        func with(_ change: (inout Values) -> Void) -> Fields {
            var copy = values
            change(&copy)
            return Fields(copy)
        }
    }

    private init(fields: Fields) { self.fields = fields }

    init(from decoder: any Decoder) throws {
        fields = Fields(try Fields.Values(from: decoder))
    }

    func encode(to encoder: any Encoder) throws {
        try fields.values.encode(to: encoder)
    }

    /// A stored response's head and decoded body, made once.
    final class Decoded: Sendable {
        let head: HTTPURLResponse
        let json: JSON

        init(head: HTTPURLResponse, json: JSON) {
            self.head = head
            self.json = json
        }
    }

    /// One request field a response varies on: its lower-cased name and the storing request's value
    /// (`nil`: the request had no such field).
    struct VaryField: Sendable, Codable, Equatable {
        let name: String
        let value: String?
    }

    /// Whether `request` differs from the storing request in a field the response's `Vary` named (a
    /// field absent in both matches).
    func varies(from request: URLRequest) -> Bool {
        guard let vary else { return false }
        return vary.contains { request.value(forHTTPHeaderField: $0.name) != $0.value }
    }

    /// Whether the entry keeps what its `Vary` needs: an entry whose response has a `Vary` but no fields
    /// recorded (written by an earlier version) can't be matched, so it answers nothing.
    var isCurrentFormat: Bool { vary != nil || header("Vary") == nil }

    var etag: String? { header("ETag") }
    var lastModified: String? { header("Last-Modified") }

    func header(_ name: String) -> String? {
        // ASCII comparison: Foundation's case-insensitive compare costs microseconds on Linux.
        headers.first { $0.key.caseInsensitiveEquals(name) }?.value
    }

    /// The size it takes in memory and on disk, about.
    var size: Int { body.count + 512 + headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } }

    func isFresh(at date: Date) -> Bool { date < expiresAt }

    /// Why this entry can't answer under `policy` for `appVersion`, or `nil` when it can.
    func mismatch(_ policy: CachePolicy, appVersion: String) -> String? {
        if version != policy.version { return "its version is \(version), the request's \(policy.version)" }
        if sensitiveData != policy.sensitiveData { return "its sensitive data differs" }
        if self.appVersion != appVersion { return "it was stored by app version \(self.appVersion)" }
        return nil
    }

    // MARK: The file format: "SBC1", the header's length (4 bytes, little-endian), the header (JSON),
    // the body's length (8 bytes) and checksum (8 bytes), the body.

    private static let magic = Data("SBC1".utf8)

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let header = try encoder.encode(self)
        var data = Self.magic
        data.append(contentsOf: withUnsafeBytes(of: UInt32(header.count).littleEndian, Array.init))
        data.append(header)
        data.append(contentsOf: withUnsafeBytes(of: UInt64(body.count).littleEndian, Array.init))
        data.append(contentsOf: withUnsafeBytes(of: StableHash.fnv(body).littleEndian, Array.init))
        data.append(body)
        return data
    }

    /// The entry in `data`, or why it is not one (truncated, corrupt, another format).
    static func decode(_ data: Data) -> Result<CachedEntry, CorruptEntry> {
        let bytes = [UInt8](data)
        guard bytes.count >= 8, Data(bytes[0..<4]) == magic else { return .failure(CorruptEntry("not a cache entry")) }
        let headerLength = Int(UInt32(littleEndian: bytes[4..<8].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
        let bodyStart = 8 + headerLength + 16
        guard headerLength > 0, bytes.count >= bodyStart else { return .failure(CorruptEntry("truncated header")) }
        guard var values = try? JSONDecoder().decode(Fields.Values.self, from: Data(bytes[8..<(8 + headerLength)])) else {
            return .failure(CorruptEntry("unreadable header"))
        }
        let lengths = bytes[(8 + headerLength)..<bodyStart].withUnsafeBytes { raw in
            (UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)), UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
        guard UInt64(bytes.count - bodyStart) == lengths.0 else { return .failure(CorruptEntry("truncated body")) }
        let body = Data(bytes[bodyStart...])
        guard StableHash.fnv(body) == lengths.1 else { return .failure(CorruptEntry("body checksum mismatch")) }
        values.body = body
        return .success(CachedEntry(fields: Fields(values)))
    }
}

/// Why a cache file is not a usable entry.
struct CorruptEntry: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
