import Foundation

/// Reads HTTP/1.1 requests off a connection: request line, headers, then a `Content-Length` or
/// `Transfer-Encoding: chunked` body.
enum HTTPRequestParser {
    /// The request line and headers, before the body is read.
    struct Head {
        var method: String
        var target: String
        var version: String
        var headers: [(name: String, value: String)]

        /// The last value of a header, compared case-insensitively.
        func header(_ name: String) -> String? {
            headers.last { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// Whether the client asked to close the connection after this exchange.
        var wantsClose: Bool {
            let tokens =
                headers
                .filter { $0.name.caseInsensitiveCompare("Connection") == .orderedSame }
                .flatMap { $0.value.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            if version == "HTTP/1.0" { return !tokens.contains("keep-alive") }
            return tokens.contains("close")
        }
    }

    /// How the body of a request is framed.
    enum BodyFraming: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// A request that cannot be served; the connection answers `status` and closes.
    struct Rejection: Error {
        var status: Int
        var message: String
    }

    static let maxLineLength = 16_384
    static let maxHeaderCount = 200
    static let maxBodyLength = 512 * 1024 * 1024

    /// Reads the request head. Returns `nil` when the peer closed cleanly between requests.
    static func readHead(from reader: inout ConnectionReader) throws -> Head? {
        var requestLine: [UInt8] = []
        // RFC 9112 §2.2: ignore at least one empty line before the request line.
        repeat {
            guard let line = try readLine(&reader) else { return nil }
            requestLine = line
        } while requestLine.isEmpty

        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard parts.count == 3,
            let method = validUTF8(parts[0]),
            let target = validUTF8(parts[1]),
            let version = validUTF8(parts[2]),
            version == "HTTP/1.1" || version == "HTTP/1.0",
            method.utf8.allSatisfy(isTokenByte)
        else { throw Rejection(status: 400, message: "malformed request line") }

        var headers: [(name: String, value: String)] = []
        while true {
            guard let line = try readLine(&reader) else {
                throw Rejection(status: 400, message: "connection closed inside the request head")
            }
            if line.isEmpty { break }
            guard headers.count < maxHeaderCount else { throw Rejection(status: 431, message: "too many headers") }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
                let name = validUTF8(line[..<colon]),
                name.utf8.allSatisfy(isTokenByte)
            else { throw Rejection(status: 400, message: "malformed header line") }
            let rawValue = String(decoding: line[(colon + 1)...], as: UTF8.self)
            headers.append((name, rawValue.trimmingCharacters(in: .whitespaces)))
        }
        return Head(method: method, target: target, version: version, headers: headers)
    }

    /// Decides how the body is framed, rejecting ambiguous or invalid framing and, unless
    /// `streamed` (a sink route, which holds nothing), a body over ``maxBodyLength``.
    static func framing(of head: Head, streamed: Bool = false) throws(Rejection) -> BodyFraming {
        let lengths = head.headers.filter { $0.name.caseInsensitiveCompare("Content-Length") == .orderedSame }
        let encodings = head.headers.filter { $0.name.caseInsensitiveCompare("Transfer-Encoding") == .orderedSame }
        if !encodings.isEmpty {
            guard lengths.isEmpty else {
                throw Rejection(status: 400, message: "both Content-Length and Transfer-Encoding were sent")
            }
            let codings = encodings.flatMap { $0.value.lowercased().split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard codings.last == "chunked" else {
                throw Rejection(status: 400, message: "unsupported Transfer-Encoding")
            }
            return .chunked
        }
        guard !lengths.isEmpty else { return .none }
        let values = Set(lengths.flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } })
        guard values.count == 1, let text = values.first, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let length = Int(text)
        else { throw Rejection(status: 400, message: "invalid Content-Length") }
        guard streamed || length <= maxBodyLength else { throw Rejection(status: 413, message: "body too large") }
        return length == 0 ? .none : .length(length)
    }

    /// Reads the body described by `framing`.
    static func readBody(_ framing: BodyFraming, from reader: inout ConnectionReader) throws -> Data {
        switch framing {
        case .none:
            return Data()
        case let .length(length):
            var body = Data(capacity: length)
            try reader.read(exactly: length, appendingTo: &body)
            return body
        case .chunked:
            return try readChunkedBody(from: &reader)
        }
    }

    /// Hands the body described by `framing` to `sink` piece by piece (any size: nothing is kept).
    static func streamBody(_ framing: BodyFraming, from reader: inout ConnectionReader, into sink: (UnsafeRawBufferPointer) -> Void) throws {
        switch framing {
        case .none:
            return
        case let .length(length):
            try reader.read(exactly: length, into: sink)
        case .chunked:
            while true {
                guard let line = try readLine(&reader) else {
                    throw Rejection(status: 400, message: "connection closed inside a chunked body")
                }
                let sizeText = String(decoding: line.prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                guard !sizeText.isEmpty, sizeText.count <= 15, let size = Int(sizeText, radix: 16), size >= 0 else {
                    throw Rejection(status: 400, message: "invalid chunk size")
                }
                if size == 0 { break }
                try reader.read(exactly: size, into: sink)
                guard let end = try readLine(&reader), end.isEmpty else {
                    throw Rejection(status: 400, message: "chunk not followed by CRLF")
                }
            }
            while let trailer = try readLine(&reader), !trailer.isEmpty {}
        }
    }

    /// Decodes a `Transfer-Encoding: chunked` body, skipping chunk extensions and trailers.
    static func readChunkedBody(from reader: inout ConnectionReader) throws -> Data {
        var body = Data()
        while true {
            guard let line = try readLine(&reader) else {
                throw Rejection(status: 400, message: "connection closed inside a chunked body")
            }
            let sizeText = line.prefix { $0 != UInt8(ascii: ";") }
            let trimmed = String(decoding: sizeText, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, trimmed.count <= 15, let size = Int(trimmed, radix: 16), size >= 0 else {
                throw Rejection(status: 400, message: "invalid chunk size")
            }
            if size == 0 { break }
            guard body.count + size <= maxBodyLength else { throw Rejection(status: 413, message: "body too large") }
            try reader.read(exactly: size, appendingTo: &body)
            guard let end = try readLine(&reader), end.isEmpty else {
                throw Rejection(status: 400, message: "chunk not followed by CRLF")
            }
        }
        // Trailer section: header lines until an empty line.
        while true {
            guard let line = try readLine(&reader) else { break }
            if line.isEmpty { break }
        }
        return body
    }

    private static func readLine(_ reader: inout ConnectionReader) throws -> [UInt8]? {
        do {
            return try reader.readLine(limit: maxLineLength)
        } catch .lineTooLong {
            throw Rejection(status: 431, message: "line too long")
        } catch {
            throw error
        }
    }

    /// RFC 9110 `tchar`.
    /// The string `bytes` spell, or `nil` when they are not well-formed UTF-8 (`String(validating:)` is
    /// iOS 18 / macOS 15; below that, a decode that repaired nothing round-trips to the same bytes).
    static func validUTF8(_ bytes: some Collection<UInt8>) -> String? {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            return String(validating: bytes, as: UTF8.self)
        }
        let decoded = String(decoding: bytes, as: UTF8.self)
        return decoded.utf8.elementsEqual(bytes) ? decoded : nil
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
