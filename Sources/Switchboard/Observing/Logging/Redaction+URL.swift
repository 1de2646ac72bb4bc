import Foundation

extension Redaction {
    /// `url` as text with its user info and the values of secret query items (and fragment items, as in
    /// `#access_token=…`) replaced; so is an item whose value holds a URL with user info (a redirect
    /// target, also percent-encoded) or a JSON Web Token, and a token in the path.
    func redact(_ url: URL) -> String {
        redact(urlText: url.absoluteString)
    }

    /// A URL or path given as text, redacted as ``redact(_:)-(URL)`` does. Works on the text (setting a
    /// query with `<` or `>` on URLComponents traps on Linux).
    func redact(urlText: String) -> String {
        // Scalars, not Characters: a combining mark after `@`, `?`, `#`, `&` or `=` would otherwise
        // hide the delimiter inside one Character (found by fuzzing). Slices of the scalar view become
        // Strings directly (rebuilding a view scalar by scalar, or replacing inside one, went through the
        // standard library's unspecialized generic code: a 3.9 KB URL with 400 query pairs took 5.8 ms,
        // 0.1 ms now; found by fuzzing, as the fuzzers' throughput).
        let scalars = urlText.unicodeScalars
        let queryStart = scalars.firstIndex { $0 == "?" || $0 == "#" } ?? scalars.endIndex
        // Before the query: the user info after every `://` (the URL's own, and a URL's in the path).
        var text = ""
        var copied = scalars.startIndex
        for (schemeEnd, at) in Self.userInfos(in: scalars[..<queryStart]) {
            text += String(scalars[copied..<schemeEnd]) + Self.placeholder
            copied = at
        }
        text += String(scalars[copied..<queryStart])
        text = redactingTokens(in: text)
        // The query (from a first `?` up to the first `#`) and the fragment, item by item.
        guard queryStart != scalars.endIndex else { return text }
        let hash = scalars[queryStart...].firstIndex(of: "#")
        if scalars[queryStart] == "?" {
            text += "?" + redactForm(String(scalars[scalars.index(after: queryStart)..<(hash ?? scalars.endIndex)]))
        }
        if let hash { text += "#" + redactForm(String(scalars[scalars.index(after: hash)...])) }
        return text
    }

    /// A form (or query) with the values of secret fields, and values that hold a URL with user info or
    /// a JSON Web Token, replaced.
    func redactForm(_ form: String) -> String {
        redactForm(form, depth: 0)
    }

    private func redactForm(_ form: String, depth: Int) -> String {
        form.unicodeScalars.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let name = pair.prefix { $0 != "=" }
            let value = pair[name.endIndex...].dropFirst()
            let text = String(name)
            // The name as written and as decoded: a broken escape (`C%fauthorization`, `%4authorization`)
            // hides the word once decoded but not from a reader of the log (found by fuzzing).
            let secretName = isSecret(text) || (name.contains("%") && isSecret(Self.leniently(decoding: text)))
            return secretName || Self.holdsSecretValue(value) || nestsSecret(String(value), depth: depth)
                ? text + "=" + Self.placeholder : String(pair)
        }.joined(separator: "&")
    }

    /// A query, form or multipart item's value as it may be shown.
    func shown(item name: String, value: String) -> String {
        isSecret(name) || Self.holdsSecretValue(value) || nestsSecret(value) ? Self.placeholder : value
    }

    /// Whether a value, as it is or percent-decoded, has a secret inside: a JSON Web Token or a URL
    /// with user info within it, JSON with a secret key (`variables={"password":…}`), or a form or
    /// query of its own with a secret item (`next=/cb?access_token=…`). Such a value is shown as
    /// the placeholder, whole.
    func nestsSecret(_ value: String, depth: Int = 0) -> Bool {
        guard !value.isEmpty else { return false }
        let decoded = value.unicodeScalars.contains("%") ? Self.leniently(decoding: value) : value
        for text in decoded == value ? [value] : [value, decoded] {
            if redactingFreeText(text) != text { return true }
            if Self.startsLikeJSON(text), redactedLoosely(text) != text { return true }
        }
        // A form inside: only once decoded (a raw `=` in a value is just a character). Three levels
        // are read; a form nested deeper is taken as secret (each level costs a pass over the text).
        guard decoded != value || decoded.unicodeScalars.contains("?"), decoded.unicodeScalars.contains("=") else { return false }
        guard depth < 3 else { return true }
        let query = Self.queryPart(of: decoded)
        return redactForm(query, depth: depth + 1) != query
    }

    /// What follows the first `?` of `text` (a path with a query), or all of it.
    private static func queryPart(of text: String) -> String {
        guard let mark = text.unicodeScalars.firstIndex(of: "?") else { return text }
        return String(text.unicodeScalars[text.unicodeScalars.index(after: mark)...])
    }

    /// `text` with each valid `%XX` decoded (as UTF-8, invalid sequences replaced) and any other `%`
    /// kept: `p%61ssword%` reads `password%`, where Foundation's decoding gives up on the whole.
    static func leniently(decoding text: String) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x25, index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Whether a query, form or multipart value is secret whatever its name: it holds a URL with user
    /// info (as it is or percent-decoded), or it is a JSON Web Token.
    static func holdsSecretValue(_ value: String) -> Bool {
        holdsSecretValue(value.unicodeScalars[...])
    }

    static func holdsSecretValue(_ value: Substring.UnicodeScalarView) -> Bool {
        if !userInfos(in: value).isEmpty || looksLikeJWT(String(value).utf8) { return true }
        guard value.contains("%") else { return false }
        let decoded = leniently(decoding: String(value))
        return !userInfos(in: decoded.unicodeScalars[...]).isEmpty || looksLikeJWT(decoded.utf8)
    }

    /// Where each `scheme://user@` in `text` has user info: the end of its `://` and its last `@` before
    /// the authority ends (at `/`, `?`, `#` or the end of `text`).
    static func userInfos(in text: Substring.UnicodeScalarView) -> [(schemeEnd: String.Index, at: String.Index)] {
        var found: [(String.Index, String.Index)] = []
        var searchFrom = text.startIndex
        while let schemeEnd = range(of: "://", in: text[searchFrom...]) {
            let authorityEnd = text[schemeEnd...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
            // An authority holds no `/`, so the next `://` ends past this `@`.
            if let at = text[schemeEnd..<authorityEnd].lastIndex(of: "@") { found.append((schemeEnd, at)) }
            searchFrom = schemeEnd
        }
        return found
    }

    /// Where `needle` ends in `haystack`, or `nil`.
    private static func range(of needle: String, in haystack: Substring.UnicodeScalarView) -> Substring.UnicodeScalarView.Index? {
        let pattern = Array(needle.unicodeScalars)
        var index = haystack.startIndex
        while index != haystack.endIndex {
            var cursor = index, matched = 0
            while matched < pattern.count, cursor != haystack.endIndex, haystack[cursor] == pattern[matched] {
                cursor = haystack.index(after: cursor)
                matched += 1
            }
            if matched == pattern.count { return cursor }
            index = haystack.index(after: index)
        }
        return nil
    }
}
