import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// What the upload routes answer about a request body, computed as it arrives (a 200 MiB upload is
/// never held in memory): its size and checksum and, for `multipart/form-data`, each part's name, file
/// name, content type, size and checksum (and the value of small fields without a file name).
public struct UploadDigest: Sendable {
    /// One part of a multipart body.
    public struct Part: Sendable {
        /// The `name` from `Content-Disposition`.
        public var name: String?
        /// The `filename` from `Content-Disposition`.
        public var fileName: String?
        /// The part's `Content-Type`.
        public var contentType: String?
        /// The part's size in bytes.
        public var size: Int64 = 0
        /// The part's checksum.
        public var checksum = Checksum()
        /// The first bytes, kept for fields (up to 4 KiB).
        var prefix = Data()
    }

    /// The whole body's checksum and size.
    public private(set) var body = Checksum()
    /// The parts, for a multipart body.
    public private(set) var parts: [Part] = []
    /// Whether the closing delimiter was seen (for a multipart body).
    public private(set) var closed = false

    private enum Phase { case preamble, headers, content, epilogue }
    private let delimiter: [UInt8]?
    private var phase = Phase.preamble
    /// Bytes held back: a possible delimiter start, or part headers not yet complete.
    private var carry: [UInt8] = []

    /// A digest for a body of `contentType`.
    public init(contentType: String?) {
        delimiter = MultipartParser.boundary(fromContentType: contentType).map { Array("\r\n--\($0)".utf8) }
    }

    /// Feeds the next bytes of the body.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        body.update(bytes)
        guard let delimiter else { return }
        if phase == .preamble && carry.isEmpty && body.count == Int64(bytes.count) {
            carry = [13, 10]  // the first delimiter has no line break before it
        }
        carry.append(contentsOf: bytes)
        process(delimiter)
    }

    /// Feeds the next bytes of the body.
    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// The answer: `{"bytes", "checksum", "parts": [{"name", "filename", "contentType", "size",
    /// "checksum", "value"}], "complete"}`.
    public var json: [String: Any] {
        var answer: [String: Any] = ["bytes": body.count, "checksum": body.hex]
        if delimiter != nil {
            answer["complete"] = closed
            answer["parts"] = parts.map { part -> [String: Any] in
                var item: [String: Any] = ["size": part.size, "checksum": part.checksum.hex]
                item["name"] = part.name ?? NSNull()
                item["filename"] = part.fileName ?? NSNull()
                item["contentType"] = part.contentType ?? NSNull()
                if part.fileName == nil, part.size <= 4096 { item["value"] = String(decoding: part.prefix, as: UTF8.self) }
                return item
            }
        }
        return answer
    }

    private mutating func process(_ delimiter: [UInt8]) {
        var consumed = 0
        defer { carry.removeFirst(consumed) }
        while consumed < carry.count {
            switch phase {
            case .epilogue:
                consumed = carry.count
            case .preamble, .content:
                let found = Self.find(delimiter, in: carry, from: consumed)
                let end = found ?? max(consumed, carry.count - delimiter.count + 1)
                if phase == .content, end > consumed { appendContent(carry[consumed..<end]) }
                guard let found else {
                    consumed = end
                    return
                }
                // After the delimiter: "--" closes, else the rest of the line then headers.
                let after = found + delimiter.count
                guard carry.count >= after + 2 else {
                    consumed = found
                    return
                }
                if carry[after] == UInt8(ascii: "-") && carry[after + 1] == UInt8(ascii: "-") {
                    closed = true
                    phase = .epilogue
                    consumed = carry.count
                    return
                }
                guard let lineEnd = carry[after...].firstIndex(of: 10) else {
                    consumed = found
                    return
                }
                consumed = lineEnd + 1
                parts.append(Part())
                phase = .headers
            case .headers:
                guard carry.count >= consumed + 2 else { return }
                if carry[consumed] == 13 && carry[consumed + 1] == 10 {
                    consumed += 2  // no headers
                } else {
                    guard let end = Self.find([13, 10, 13, 10], in: carry, from: consumed) else { return }
                    readHeaders(String(decoding: carry[consumed..<end], as: UTF8.self))
                    consumed = end + 4
                }
                phase = .content
            }
        }
    }

    private mutating func appendContent(_ bytes: ArraySlice<UInt8>) {
        guard !parts.isEmpty else { return }
        bytes.withUnsafeBytes { parts[parts.count - 1].checksum.update($0) }
        parts[parts.count - 1].size += Int64(bytes.count)
        if parts[parts.count - 1].prefix.count < 4096 {
            parts[parts.count - 1].prefix.append(contentsOf: bytes.prefix(4096 - parts[parts.count - 1].prefix.count))
        }
    }

    private mutating func readHeaders(_ block: String) {
        for line in block.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-type" { parts[parts.count - 1].contentType = value }
            if name == "content-disposition" {
                for (key, parameter) in MultipartParser.splitParameters(value).dropFirst() {
                    if key == "name" { parts[parts.count - 1].name = parameter }
                    if key == "filename" { parts[parts.count - 1].fileName = parameter }
                }
            }
        }
    }

    /// The index of `needle` in `haystack` from `start`: `memchr` for its first byte, then a compare.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count > 0, haystack.count - start >= needle.count else { return nil }
        return haystack.withUnsafeBytes { raw -> Int? in
            needle.withUnsafeBytes { pattern -> Int? in
                let base = raw.baseAddress!
                var position = start
                let last = haystack.count - needle.count
                while position <= last {
                    guard let hit = memchr(base + position, Int32(needle[0]), last - position + 1) else { return nil }
                    let index = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + index, pattern.baseAddress!, needle.count) == 0 { return index }
                    position = index + 1
                }
                return nil
            }
        }
    }
}
