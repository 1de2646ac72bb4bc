import Foundation

/// One part of a `multipart/form-data` body.
struct MultipartPart: Sendable {
    /// The `name` from `Content-Disposition`.
    var name: String
    /// The `filename` from `Content-Disposition`, when the part is a file.
    var fileName: String?
    /// The part's `Content-Type`, when given.
    var contentType: String?
    /// The part's bytes.
    var data: Data
}

/// A tolerant `multipart/form-data` parser for the upload routes (RFC 7578): CRLF or LF line ends,
/// `Content-Disposition` name/filename, and `Content-Type`.
enum MultipartParser {
    /// The `boundary` parameter of a `multipart/…` content type (quotes removed), or `nil`.
    static func boundary(fromContentType contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/") else { return nil }
        for parameter in splitParameters(contentType).dropFirst() {
            let (name, value) = parameter
            if name == "boundary", !value.isEmpty { return value }
        }
        return nil
    }

    /// The parts of `body`; parts without a `name` are skipped, and a missing closing delimiter is tolerated.
    static func parse(_ body: Data, boundary: String) -> [MultipartPart] {
        let bytes = [UInt8](body)
        let delimiter = Array("--\(boundary)".utf8)
        guard var position = find(delimiter, in: bytes, from: 0) else { return [] }
        var parts: [MultipartPart] = []
        while true {
            position += delimiter.count
            // "--" after the delimiter closes the body.
            if position + 1 < bytes.count && bytes[position] == UInt8(ascii: "-") && bytes[position + 1] == UInt8(ascii: "-") {
                break
            }
            // Skip transport padding up to the end of the delimiter line.
            guard let lineEnd = bytes[position...].firstIndex(of: UInt8(ascii: "\n")) else { break }
            let partStart = lineEnd + 1
            let next = find(delimiter, in: bytes, from: partStart)
            var partEnd = next ?? bytes.count
            // The line break before the next delimiter belongs to the delimiter.
            if next != nil && partEnd > partStart && bytes[partEnd - 1] == UInt8(ascii: "\n") { partEnd -= 1 }
            if next != nil && partEnd > partStart && bytes[partEnd - 1] == UInt8(ascii: "\r") { partEnd -= 1 }
            if let part = parsePart(bytes[partStart..<max(partStart, partEnd)]) { parts.append(part) }
            guard let next else { break }
            position = next
        }
        return parts
    }

    private static func parsePart(_ bytes: ArraySlice<UInt8>) -> MultipartPart? {
        var headers: [String: String] = [:]
        var cursor = bytes.startIndex
        while cursor < bytes.endIndex {
            let lineEnd = bytes[cursor...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            var line = bytes[cursor..<lineEnd]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            cursor = min(lineEnd + 1, bytes.endIndex)
            if line.isEmpty { break }
            let text = String(decoding: line, as: UTF8.self)
            if let colon = text.firstIndex(of: ":") {
                let name = text[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
                headers[name] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        guard let disposition = headers["content-disposition"] else { return nil }
        var name: String?
        var fileName: String?
        for (key, value) in splitParameters(disposition).dropFirst() {
            if key == "name" { name = value }
            if key == "filename" { fileName = value }
        }
        guard let name else { return nil }
        return MultipartPart(
            name: name, fileName: fileName, contentType: headers["content-type"],
            data: Data(bytes[cursor..<bytes.endIndex]))
    }

    /// Splits `a; b=1; c="x;y"` into lowercased names and unquoted values, honouring quotes.
    ///
    /// A backslash is an ordinary character, as browsers write form-data (the HTML standard's
    /// encoding percent-encodes `"`, CR and LF in names and file names and escapes nothing else), so
    /// `filename="C:\dir\a.txt"` keeps its backslashes. It reads Unicode scalars, not characters: a
    /// name may begin with a combining mark, which as a `Character` would hide the quote before it.
    static func splitParameters(_ text: String) -> [(String, String)] {
        var pieces: [[Unicode.Scalar]] = []
        var current: [Unicode.Scalar] = []
        var quoted = false
        for scalar in text.unicodeScalars {
            if scalar == "\"" {
                quoted.toggle()
                current.append(scalar)
            } else if scalar == ";" && !quoted {
                pieces.append(current)
                current = []
            } else {
                current.append(scalar)
            }
        }
        pieces.append(current)
        return pieces.map { piece in
            let trimmed = trimmingSpaces(piece[...])
            guard let equals = trimmed.firstIndex(of: "=") else { return (string(trimmed).lowercased(), "") }
            let key = string(trimmingSpaces(trimmed[..<equals])).lowercased()
            var value = trimmingSpaces(trimmed[(equals + 1)...])
            if value.count >= 2 && value.first == "\"" && value.last == "\"" {
                value = value.dropFirst().dropLast()
            }
            return (key, string(value))
        }
    }

    private static func trimmingSpaces(_ scalars: ArraySlice<Unicode.Scalar>) -> ArraySlice<Unicode.Scalar> {
        var slice = scalars
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return slice
    }

    private static func string(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars)
        return String(text)
    }

    /// The index of the first occurrence of `needle` in `haystack` at or after `start`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, needle.count <= haystack.count else { return nil }
        var index = start
        let last = haystack.count - needle.count
        while index <= last {
            guard let candidate = haystack[index...last].firstIndex(of: first) else { return nil }
            if haystack[candidate..<(candidate + needle.count)].elementsEqual(needle) { return candidate }
            index = candidate + 1
        }
        return nil
    }
}
