import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What every transport checks in a response head before it reads the body (RFC 9112 §2–§6): a head
/// that breaks the message syntax ends the send at once with ``NetworkError/malformedResponse(reason:)``,
/// instead of a body read by a guessed length (a `Content-Length: 2x` read as 2, a success) or a wait
/// for bytes that never come (two lengths that disagree, the connection kept open).
enum ResponseFraming {
    /// The first problem of a head's fields, as received (a repeated field once per line, or joined
    /// with ", " as `HTTPURLResponse` joins them), or `nil`:
    /// - a field name that is not a token (empty, a space, a control character, a separator);
    /// - a `Content-Length` that is not one non-negative decimal number: a sign, junk after the digits,
    ///   more digits than a 63-bit length has, empty; several that disagree (identical copies are one
    ///   length, as RFC 9110 §8.6 allows).
    static func problem<Fields: Sequence>(in fields: Fields) -> String? where Fields.Element == (name: String, value: String) {
        var length: String?
        for (name, value) in fields {
            guard isToken(name.utf8) else { return nameProblem(name.utf8) }
            guard name.utf8.count == 14, name.caseInsensitiveEquals("Content-Length") else { continue }
            for item in value.utf8.split(separator: 0x2C, omittingEmptySubsequences: false) {
                var digits = item[...]
                while let first = digits.first, first == 0x20 || first == 0x09 { digits = digits.dropFirst() }
                while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
                // Leading zeros don't count; at most a 63-bit length (what libcurl reads).
                let normalized = String(decoding: digits.drop { $0 == 0x30 }, as: UTF8.self)
                guard !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), fitsInt64(normalized) else {
                    return "Content-Length \(shown(value)) is not a non-negative decimal length"
                }
                if let length, length != normalized {
                    return "two Content-Lengths disagree (\(length.isEmpty ? "0" : length) and \(normalized.isEmpty ? "0" : normalized))"
                }
                length = normalized
            }
        }
        return nil
    }

    /// Why a field name is not a token, quoting only its token part (what follows a space may be a
    /// value: `Set-Cookie sid=…` is one line missing its colon).
    static func nameProblem<Bytes: Collection<UInt8>>(_ name: Bytes) -> String {
        let prefix = name.prefix { tokenBytes[Int($0)] }.prefix(40)
        guard let bad = name.first(where: { !tokenBytes[Int($0)] }) else { return "an empty header field name" }
        let what = bad == 0x20 || bad == 0x09 ? "a space" : String(format: "the byte 0x%02X", bad)
        return "the header field name \(String(decoding: prefix, as: UTF8.self).debugDescription)… has \(what) in it"
    }

    /// A value for a reason: at most 20 characters, quoted.
    private static func shown(_ value: String) -> String {
        (value.count > 20 ? String(value.prefix(20)) + "…" : value).debugDescription
    }

    /// Whether decimal digits without leading zeros fit in an `Int64`.
    private static func fitsInt64(_ digits: String) -> Bool {
        digits.utf8.count < int64Maximum.utf8.count || (digits.utf8.count == int64Maximum.utf8.count && digits <= int64Maximum)
    }

    private static let int64Maximum = String(Int64.max)

    /// The problem of parsed fields.
    static func problem(in fields: [HTTPHeaders.Field]) -> String? {
        problem(in: fields.lazy.map { (name: $0.name, value: $0.value) })
    }

    /// The problem of an `HTTPURLResponse`'s `Content-Length` (repeated fields arrive joined when their
    /// names are spelled alike; of two that differ in case, FoundationNetworking keeps one and the
    /// other can't be seen: see LinuxNotes). Its field names are not read: FoundationNetworking refuses
    /// a head with a name that is not a token itself, and reading them all costs a dictionary per
    /// response.
    static func problem(in response: HTTPURLResponse) -> String? {
        guard let length = response.value(forHTTPHeaderField: "Content-Length") else { return nil }
        // The usual case at once: up to 18 digits is one length that fits.
        if (1...18).contains(length.utf8.count), length.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return nil }
        return problem(in: CollectionOfOne((name: "Content-Length", value: length)))
    }

    /// Whether `name` is an RFC 9110 token: one or more of the letters, digits and ``!#$%&'*+-.^_`|~``.
    static func isToken<Bytes: Collection<UInt8>>(_ name: Bytes) -> Bool {
        !name.isEmpty && name.allSatisfy { tokenBytes[Int($0)] }
    }

    private static let tokenBytes: [Bool] = (0..<256).map { byte in
        switch UInt8(byte) {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// A status line's problem, or `nil` for `HTTP/<version> <3 digits>[ <reason>]`.
    static func statusLineProblem<Bytes: Collection<UInt8>>(_ line: Bytes) -> String? where Bytes.Index == Int {
        let text = { String(decoding: line.prefix(80), as: UTF8.self).debugDescription }
        guard let space = line.firstIndex(of: 0x20) else { return "the status line \(text()) has no status code" }
        var digits = space
        while digits < line.endIndex, line[digits] == 0x20 { digits += 1 }
        var end = digits
        while end < line.endIndex, line[end] != 0x20 { end += 1 }
        guard end - digits == 3, line[digits..<end].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return "the status line \(text()) has no three-digit status code"
        }
        return nil
    }
}
