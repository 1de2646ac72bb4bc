import Foundation

extension Redaction {
    /// A multipart body as text: each part's headers as they are, its content replaced when the field's
    /// name is secret (or its value is), described by its size when it isn't text, and redacted loosely
    /// otherwise. A body whose parts can't be found (no boundary, no delimiter) is described by its size
    /// only: what can't be read can't be shown safely.
    func redactMultipart(_ body: Data, contentType: String) -> String {
        guard let boundary = Self.boundary(in: contentType) else { return "(\(body.count) bytes of multipart data)" }
        return redactMultipart(body, boundary: boundary)
    }

    /// A multipart body with a known boundary, as ``redactMultipart(_:contentType:)`` shows it.
    func redactMultipart(_ body: Data, boundary: String) -> String {
        let unreadable = "(\(body.count) bytes of multipart data)"
        // RFC 2046 §5.1.1: at most 70 characters (a longer one would make the search slow).
        guard !boundary.isEmpty, boundary.utf8.count <= 70 else { return unreadable }
        let bytes = [UInt8](body)
        let delimiter = Array("--\(boundary)".utf8)
        var starts: [Int] = []
        var from = 0
        while let found = Self.find(delimiter, in: bytes, from: from) {
            starts.append(found)
            from = found + delimiter.count
        }
        guard !starts.isEmpty else { return unreadable }
        var lines: [String] = []
        for (number, start) in starts.enumerated() {
            let contentStart = start + delimiter.count
            if bytes[contentStart...].starts(with: [0x2D, 0x2D]) {
                lines.append("--\(boundary)--")
                break
            }
            guard number + 1 < starts.count else { return unreadable }  // a part with no delimiter after it
            // Between delimiters: CRLF, headers, CRLF CRLF, content, CRLF.
            var end = starts[number + 1]
            if end >= 2, bytes[end - 2] == 0x0D, bytes[end - 1] == 0x0A { end -= 2 }
            let part = bytes[min(contentStart, end)..<end]
            guard let split = Self.find([0x0D, 0x0A, 0x0D, 0x0A], in: Array(part), from: 0) else { return unreadable }
            let headerText = String(decoding: part.prefix(split), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let content = Data(part.dropFirst(split + 4))
            let name = Self.fieldName(inPartHeaders: headerText)
            lines.append("--\(boundary)")
            lines.append(
                headerText.split(separator: "\r\n").map { line in
                    let pieces = line.split(separator: ":", maxSplits: 1)
                    guard pieces.count == 2, String(pieces[0]).lowercased() != "content-disposition" else { return String(line) }
                    return "\(pieces[0]):" + shown(header: String(pieces[0]), value: String(pieces[1]))
                }.joined(separator: "\r\n"))
            lines.append("")
            lines.append(shownContent(content, name: name))
        }
        return lines.joined(separator: "\r\n")
    }

    /// A part's content as it may be shown.
    private func shownContent(_ content: Data, name: String?) -> String {
        if let name, isSecret(name) { return Self.placeholder }
        guard let text = String(data: content, encoding: .utf8) else { return "(\(content.count) bytes of binary data)" }
        if Self.holdsSecretValue(text) { return Self.placeholder }
        // As text, never as a multipart body of its own (a hostile body must not nest without end).
        if let json = try? JSON.parse(content) { return redact(json).description }
        return redactedText(text)
    }

    /// The boundary of a body that starts as a multipart body does (`--boundary` CR LF, then a
    /// `Content-Disposition`), whatever its content type says: one sent without its type is still
    /// shown part by part.
    static func sniffedBoundary(_ body: Data) -> String? {
        guard body.starts(with: [0x2D, 0x2D]) else { return nil }
        let head = body.prefix(74 + 2)
        guard let lineEnd = head.firstIndex(of: 0x0D), lineEnd > head.startIndex + 2 else { return nil }
        let boundary = String(decoding: head[(head.startIndex + 2)..<lineEnd], as: UTF8.self)
        let next = body[lineEnd...].prefix(64)
        guard String(decoding: next, as: UTF8.self).lowercased().contains("content-disposition") else { return nil }
        return boundary
    }

    /// The `boundary` parameter of a multipart content type, unquoted.
    static func boundary(in contentType: String) -> String? {
        parameter("boundary", in: contentType).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The `name` parameter of a part's `Content-Disposition`, percent-decoded as browsers encode it.
    static func fieldName(inPartHeaders headers: String) -> String? {
        for line in headers.split(separator: "\r\n") {
            let pieces = line.split(separator: ":", maxSplits: 1)
            guard pieces.count == 2, pieces[0].lowercased().trimmingCharacters(in: .whitespaces) == "content-disposition" else { continue }
            guard let name = parameter("name", in: String(pieces[1])) else { return nil }
            return name.removingPercentEncoding ?? name
        }
        return nil
    }

    /// A `;`-separated parameter's value (quotes removed), matched by name without regard to case.
    private static func parameter(_ wanted: String, in header: String) -> String? {
        for piece in header.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == wanted else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value
        }
        return nil
    }

    /// Where `needle` starts in `bytes` at or after `from`.
    private static func find(_ needle: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count else { return nil }
        var index = from
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
