import Foundation

extension Redaction {
    /// `json` with the values of secret keys, strings that are JSON Web Tokens or URLs with user info,
    /// and the secret items of strings that are forms, replaced at any depth.
    func redact(_ json: JSON) -> JSON {
        switch json {
        case .object(let object):
            var copy: [String: JSON] = [:]
            for (key, value) in object {
                copy[key] = isSecret(key) ? .string(Self.placeholder) : redact(value)
            }
            return .object(copy)
        case .array(let items):
            return .array(items.map(redact))
        case .string(let text):
            // A string may hold a form (an echoed body), a URL with user info or a token.
            if Self.holdsSecretValue(text) { return .string(Self.placeholder) }
            if Self.startsLikeJSON(text) { return .string(redactedLoosely(text)) }
            return .string(Self.looksLikeForm(text) ? redactForm(text) : redactingFreeText(text))
        default:
            return json
        }
    }

    /// A readable, redacted preview of a body: JSON, form and multipart bodies have secret fields
    /// replaced; other text has `"name": value` pairs with secret names and JSON Web Tokens cut out;
    /// the result is cut to `limit` characters; binary data is described by its size.
    func preview(_ body: Data?, contentType: String?, limit: Int = 500) -> String {
        guard let body, !body.isEmpty else { return "(empty)" }
        // Only the start is read (a hostile body must not make a log line slow): a JSON body cut
        // there no longer parses and is redacted loosely, a multipart one is only sized.
        var start = body.count > Self.readLimit ? body.prefix(Self.readLimit) : body
        // Not inside a UTF-8 character: text cut there would read as binary data.
        while start.count < body.count, let next = body.dropFirst(start.count).first, next & 0xC0 == 0x80, start.count > Self.readLimit - 4 {
            start = start.dropLast()
        }
        guard var text = redactedText(start, contentType: contentType) else { return "(\(body.count) bytes of binary data)" }
        if text.count > limit || start.count < body.count { text = String(text.prefix(limit)) + "… (\(body.count) bytes)" }
        return text
    }

    /// How much of a body a preview reads.
    static let readLimit = 16 << 10

    /// A body as redacted text: JSON, form and multipart bodies with secret fields replaced (a form is
    /// recognised by its content type, or by its `name=value&…` look; a multipart body by its content
    /// type); other text redacted loosely (``redactedLoosely(_:)``); `nil` for binary data.
    func redactedText(_ body: Data, contentType: String?) -> String? {
        let type = contentType?.lowercased() ?? ""
        if type.hasPrefix("multipart/") { return redactMultipart(body, contentType: contentType ?? "") }
        if let boundary = Self.sniffedBoundary(body) { return redactMultipart(body, boundary: boundary) }
        if let json = try? JSON.parse(body) { return redact(json).description }
        guard let text = String(data: body, encoding: .utf8) else { return nil }
        return redactedText(text, isForm: type.contains("x-www-form-urlencoded"))
    }

    /// Text that is not valid JSON: broken JSON (it starts with `{` or `[`) redacted loosely, a form by
    /// its items, anything else as free text.
    func redactedText(_ text: String, isForm: Bool = false) -> String {
        if !isForm, Self.startsLikeJSON(text) { return redactedLoosely(text) }
        if isForm || Self.looksLikeForm(text) { return redactForm(text) }
        return redactedLoosely(text)
    }

    /// Whether `text`, after white space, starts with `{` or `[`.
    static func startsLikeJSON(_ text: String) -> Bool {
        let first = text.utf8.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        return first == 0x7B || first == 0x5B
    }

    /// The start of a body for an error's message (``NetworkError/decoding(reason:snippet:)``): up to
    /// `limit` characters, redacted as a form when it looks like one and loosely otherwise. The
    /// redaction reads past the cut (the first 4 KB), so a secret that starts before it is recognised.
    func snippet(of body: Data, limit: Int) -> String {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        return String(redactedText(text).prefix(limit))
    }

    /// Text that may be broken JSON (a body that did not parse, the start of one): each `"name": value`
    /// whose name is secret has its value replaced (to the closing quote or bracket, or to the end of
    /// the text when there is none), and JSON Web Tokens are cut out.
    func redactedLoosely(_ text: String) -> String {
        var bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == 0x22 else {
                output.append(bytes[index])
                index += 1
                continue
            }
            let end = Self.stringEnd(in: bytes, openingAt: index)
            output.append(contentsOf: bytes[index..<end])
            // A key: a string followed by `:`.
            var cursor = end
            while cursor < bytes.count, Self.isJSONSpace(bytes[cursor]) { cursor += 1 }
            guard cursor < bytes.count, bytes[cursor] == 0x3A else {
                index = end
                continue
            }
            let name = String(decoding: bytes[(index + 1)..<max(index + 1, end - 1)], as: UTF8.self)
            guard isSecret(name) else {
                index = end
                continue
            }
            cursor += 1
            while cursor < bytes.count, Self.isJSONSpace(bytes[cursor]) { cursor += 1 }
            output.append(contentsOf: bytes[end..<cursor])
            output.append(contentsOf: Array("\"\(Self.placeholder)\"".utf8))
            index = Self.valueEnd(in: bytes, startingAt: cursor)
        }
        bytes = output
        return redactingFreeText(String(decoding: bytes, as: UTF8.self))
    }

    /// Free text with JSON Web Tokens and the user info of URLs in it replaced.
    func redactingFreeText(_ text: String) -> String {
        redactingTokens(in: Self.redactingUserInfo(in: text))
    }

    /// `text` with the user info of each `scheme://user@host` in it replaced; in free text an authority
    /// also ends at white space or a quote.
    static func redactingUserInfo(in text: String) -> String {
        guard text.utf8.count >= 4, text.utf8.contains(0x40) else { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var copied = 0
        var index = 0
        while index + 3 <= bytes.count {
            guard bytes[index] == 0x3A, index + 2 < bytes.count, bytes[index + 1] == 0x2F, bytes[index + 2] == 0x2F else {
                index += 1
                continue
            }
            let authorityStart = index + 3
            var end = authorityStart
            var at: Int?
            while end < bytes.count, ![0x2F, 0x3F, 0x23, 0x20, 0x09, 0x0A, 0x0D, 0x22, 0x27].contains(bytes[end]) {
                if bytes[end] == 0x40 { at = end }
                end += 1
            }
            if let at {
                output.append(contentsOf: bytes[copied..<authorityStart])
                output.append(contentsOf: Array(placeholder.utf8))
                copied = at
            }
            index = end
        }
        guard copied > 0 else { return text }
        output.append(contentsOf: bytes[copied...])
        return String(decoding: output, as: UTF8.self)
    }

    /// `text` with every JSON Web Token in it replaced by the placeholder.
    func redactingTokens(in text: String) -> String {
        // Cheap test first: no `eyJ`, nothing to do.
        guard text.utf8.count >= 3, Self.firstTokenStart(in: Array(text.utf8), from: 0) != nil else { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var copied = 0
        var from = 0
        while let start = Self.firstTokenStart(in: bytes, from: from) {
            var end = start
            while end < bytes.count, Self.isBase64URL(bytes[end]) || bytes[end] == 0x2E { end += 1 }
            // The run, or the run without its trailing dots but one (an unsigned token ends with a
            // dot), or without all of them (a sentence's full stop after a token is not part of it):
            // at most three checks, each linear.
            var bare = end
            while bare > start, bytes[bare - 1] == 0x2E { bare -= 1 }
            let candidates = [end, min(end, bare + 1), bare]
            if let candidate = candidates.first(where: { Self.looksLikeJWT(bytes[start..<$0]) }) {
                output.append(contentsOf: bytes[copied..<start])
                output.append(contentsOf: Array(Self.placeholder.utf8))
                copied = candidate
            }
            from = end
        }
        output.append(contentsOf: bytes[copied...])
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether `value` is a JSON Web Token: `eyJ` (base64url of `{"`), then three (JWS) or five (JWE)
    /// dot-separated base64url segments, all but the last non-empty (an unsigned token ends with `.`).
    static func looksLikeJWT<Bytes: Collection<UInt8>>(_ value: Bytes) -> Bool {
        guard value.starts(with: [0x65, 0x79, 0x4A]) else { return false }
        var dots = 0
        for byte in value where byte == 0x2E {
            dots += 1
            if dots > 4 { return false }
        }
        let segments = value.split(separator: 0x2E, omittingEmptySubsequences: false)
        guard segments.count == 3 || segments.count == 5 else { return false }
        for (index, segment) in segments.enumerated() {
            if segment.isEmpty && index != segments.count - 1 { return false }
            if !segment.allSatisfy(isBase64URL) { return false }
        }
        return true
    }

    /// Where the next `eyJ` that starts a word begins: not preceded by a base64url byte or `.`, unless
    /// that byte ends an escape (`\n`) or a percent-encoded byte (`%20`, `%3D`).
    private static func firstTokenStart(in bytes: [UInt8], from: Int) -> Int? {
        var index = from
        while index + 3 <= bytes.count {
            if bytes[index] == 0x65, bytes[index + 1] == 0x79, bytes[index + 2] == 0x4A {
                if index == 0 || !(isBase64URL(bytes[index - 1]) || bytes[index - 1] == 0x2E) { return index }
                if index >= 2, bytes[index - 2] == 0x5C { return index }
                if index >= 3, bytes[index - 3] == 0x25 { return index }
            }
            index += 1
        }
        return nil
    }

    static func isBase64URL(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
    }

    private static func isJSONSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    /// Past the string opening at `start`: after its closing quote (a `\` escapes the next byte), or the
    /// end of `bytes` when it has none.
    private static func stringEnd(in bytes: [UInt8], openingAt start: Int) -> Int {
        var index = start + 1
        while index < bytes.count {
            if bytes[index] == 0x5C {
                index += 2
                continue
            }
            if bytes[index] == 0x22 { return index + 1 }
            index += 1
        }
        return bytes.count
    }

    /// Past the value starting at `start`: a string, an object or array (to its matching bracket), or a
    /// bare word (to the next `,`, `}`, `]` or space); the end of `bytes` when it isn't closed.
    private static func valueEnd(in bytes: [UInt8], startingAt start: Int) -> Int {
        guard start < bytes.count else { return start }
        switch bytes[start] {
        case 0x22:
            return stringEnd(in: bytes, openingAt: start)
        case 0x7B, 0x5B:
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case 0x22:
                    index = stringEnd(in: bytes, openingAt: index)
                    continue
                case 0x7B, 0x5B: depth += 1
                case 0x7D, 0x5D:
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default: break
                }
                index += 1
            }
            return bytes.count
        default:
            var index = start
            while index < bytes.count, ![0x2C, 0x7D, 0x5D].contains(bytes[index]), !isJSONSpace(bytes[index]) { index += 1 }
            return index
        }
    }

    /// Whether `text` is `name=value` pairs joined by `&` (no spaces or newlines).
    static func looksLikeForm(_ text: String) -> Bool {
        // `=` as a scalar (Foundation's `contains` missed one followed by a combining mark, and the body
        // was shown as plain text); the spaces as Characters, so a mark on one keeps the body a form.
        // Quotes and braces are JSON's (a raw one in a form would be percent-encoded).
        !text.isEmpty && text.unicodeScalars.contains("=") && !text.contains(where: { $0 == " " || $0 == "\n" || $0 == "\r" })
            && !text.unicodeScalars.contains(where: { $0 == "\"" || $0 == "{" || $0 == "}" })
    }
}
