import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Media types as responses name them: the MIME type of a `Content-Type` (the last of several, without
/// parameters, lower-cased) and whether a set of acceptable types accepts it.
enum MediaType {
    /// The response's MIME type, lower-cased, without parameters. Of several `Content-Type` lines
    /// (which Foundation joins with commas) the last counts, as in browsers.
    static func mimeType(of response: HTTPURLResponse) -> String? {
        // `mimeType` was parsed from Content-Type when the response was made; a header lookup would
        // bridge and compare strings again.
        guard var type = response.mimeType else { return nil }
        if type.utf8.contains(UInt8(ascii: ",")) {
            guard let last = lastMediaType(in: response.value(forHTTPHeaderField: "Content-Type") ?? type) else { return nil }
            type = last
        }
        // Usually it is already bare lower-case ASCII ("application/json"): then it is used as it is,
        // because trimming through Foundation costs microseconds per response on Linux.
        let isBare = type.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        let normalized = isBare ? type : type.trimmingCharacters(in: .whitespaces).lowercased()
        return normalized.isEmpty ? nil : normalized
    }

    /// The media type (without parameters) of the last non-empty value in a comma-joined
    /// `Content-Type`; commas inside quoted parameters don't split.
    /// The MIME type of the usual header, one media type of token characters with parameters maybe
    /// (`application/json; charset=utf-8`), read without Foundation: lower-cased, without parameters.
    /// `nil` for anything else (several types, quotes, spaces inside, no `/`), which needs the careful
    /// reading of `mimeType(of:)`.
    static func fastMediaType(_ header: String) -> String? {
        guard !header.utf8.contains(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 >= 0x80 }) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(header.utf8.count)
        for byte in header.utf8 {
            if byte == UInt8(ascii: ";") { break }
            bytes.append((0x41...0x5A).contains(byte) ? byte | 0x20 : byte)
        }
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")), slash > 0, slash < bytes.count - 1,
            bytes.allSatisfy({ $0 == UInt8(ascii: "/") || isTokenByte($0) }),
            bytes.lastIndex(of: UInt8(ascii: "/")) == slash
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An RFC 9110 token character.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    static func lastMediaType(in header: String) -> String? {
        var values: [String] = [], current = "", quoted = false
        for character in header {
            if character == "\"" { quoted.toggle() }
            if character == ",", !quoted {
                values.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        values.append(current)
        for value in values.reversed() {
            let type = value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            let trimmed = type.trimmingCharacters(in: .whitespaces).lowercased()
            if trimmed.contains("/") { return trimmed }
        }
        return nil
    }

    /// Whether `mime` is acceptable: `*/*` accepts anything (even no type), `type/*` any subtype, an
    /// empty set nothing; `application/json` also accepts any `+json` type (`application/problem+json`).
    static func isAcceptable(_ mime: String?, in types: Set<String>) -> Bool {
        if types.contains("*/*") { return true }
        guard let mime else { return false }
        if types.contains(mime) || types.contains(where: { $0.lowercased() == mime }) { return true }
        if let slash = mime.firstIndex(of: "/"), types.contains(String(mime[...slash]) + "*") { return true }
        return mime.hasSuffix("+json") && types.contains("application/json")
    }

}
