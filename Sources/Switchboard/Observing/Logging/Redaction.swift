import Foundation

/// Keeps secrets out of logs, cURL descriptions and error descriptions.
///
/// A value is redacted when
/// - it is the value of `Authorization`, `Proxy-Authorization`, `Cookie` or `Set-Cookie`;
/// - its name (a header's, a query or form item's, a JSON key's, a multipart field's) *contains* one of
///   `token`, `key`, `secret`, `auth`, `session`, `password`, `passwd`, `signature`, `credential`
///   (case-insensitive);
/// - its name, split into words on `_`, `-` and `.` after lower-casing, has a *whole* word among `code`,
///   `code_verifier`, `otp`, `pin`, `sid`, `sig`, `jwt`, `assertion`, `nonce` (so `code_verifier` and
///   `auth.pin` are secret; `zipcode`, `shipping` and `design` are not);
/// - its name is one of ``Configuration/redactedNames``;
/// - it looks like a JSON Web Token (`eyJ…`, three or five dot-separated base64url segments), whatever
///   its name; such a token is also cut out of free text (a path, a plain-text body, an error snippet);
/// - it is the user info of a URL (`https://user:password@host`), or a query, fragment or form item
///   that holds a URL with user info (a redirect target, also percent-encoded:
///   `next=https%3A%2F%2Fuser%3Apw%40host`).
struct Redaction: Sendable {
    /// What stands in for a secret.
    static let placeholder = "<redacted>"

    /// Headers whose values are never shown, whatever the name rule says.
    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Parts of a name that mark it as secret wherever they appear in it.
    static let secretWords = ["token", "key", "secret", "auth", "session", "password", "passwd", "signature", "credential"]

    /// Short names that mark a name as secret only as a whole word of it (found inside a longer word,
    /// as `pin` in `shipping`, they mean nothing).
    static let secretWholeWords = ["code", "code_verifier", "otp", "pin", "sid", "sig", "jwt", "assertion", "nonce"]

    /// The rules with no extra names.
    static let standard = Redaction(extraNames: [])

    /// Extra names (lower-cased) whose values are redacted.
    let extraNames: Set<String>

    init(extraNames: Set<String>) {
        self.extraNames = Set(extraNames.map { $0.lowercased() })
    }

    /// Whether a parameter, JSON key, multipart field or header named `name` holds a secret. Works on
    /// the lower-cased name's UTF-8 bytes (a word followed by a combining mark still counts).
    func isSecret(_ name: String) -> Bool {
        var lower = name.lowercased()
        if Self.secretHeaders.contains(lower) || extraNames.contains(lower) { return true }
        return lower.withUTF8 { Self.containsSecretWord($0) || Self.hasSecretWholeWord($0) }
    }

    /// The secret words as bytes (all ASCII).
    private static let secretWordBytes: [[UInt8]] = secretWords.map { Array($0.utf8) }

    /// The whole words as bytes; `code_verifier` is matched as the two words it splits into.
    private static let wholeWordBytes: [[[UInt8]]] = secretWholeWords.map { word in
        word.utf8.split(whereSeparator: isWordSeparator).map(Array.init)
    }

    /// What separates the words of a name: `_`, `-` and `.`, and any other ASCII byte that is neither
    /// a letter nor a digit (`user[pin]`, `otp[]`, `x:sid`). Other bytes belong to words.
    private static func isWordSeparator(_ byte: UInt8) -> Bool {
        byte < 0x80 && !((0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte))
    }

    /// Whether `bytes` contain one of the secret words. A byte search, not Foundation's `contains`: that
    /// one compares with canonical equivalence through `NSString`: 3.2 µs for a 20-byte name, 0.14 µs
    /// this way (release build).
    private static func containsSecretWord(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for word in secretWordBytes where word.count <= bytes.count {
            let first = word[0]
            var start = 0
            while start + word.count <= bytes.count {
                if bytes[start] == first {
                    var matched = 1
                    while matched < word.count, bytes[start + matched] == word[matched] { matched += 1 }
                    if matched == word.count { return true }
                }
                start += 1
            }
        }
        return false
    }

    /// Whether the words of `bytes` (split on `_`, `-`, `.`) hold one of the whole words, as a run of
    /// consecutive words.
    private static func hasSecretWholeWord(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let words = bytes.split(omittingEmptySubsequences: true, whereSeparator: isWordSeparator)
        for index in words.indices {
            for phrase in wholeWordBytes where index + phrase.count <= words.count {
                if zip(phrase, words[index..<(index + phrase.count)]).allSatisfy({ $0.elementsEqual($1) }) { return true }
            }
        }
        return false
    }

    /// A header's value as it may be shown: redacted for a secret name or a JSON Web Token value; a URL
    /// in it (`Referer`, `Location`) without its user info.
    func shown(header name: String, value: String) -> String {
        if isSecret(name) || Self.looksLikeJWT(value.utf8) { return Self.placeholder }
        // A URL (`Referer`, `Location`): its user info and secret query items too.
        return value.contains("://") ? redact(urlText: value) : redactingTokens(in: value)
    }

    /// An error's description with any body it carries redacted.
    func describe(_ error: NetworkError) -> String {
        if case .decoding(let reason, let snippet) = error {
            // The snippet was redacted when the error was made; this redacts one made by an app too.
            return "undecodable body: \(reason); body starts \(redactedLoosely(snippet).debugDescription)"
        }
        if case .invalidRequest(let reason) = error {
            // Reasons quote what was wrong; a quoted URL or path may carry secrets.
            return "invalid request: " + redactQuoted(reason)
        }
        guard let response = error.errorResponse else { return error.description }
        let preview = preview(response.body, contentType: response.headers["Content-Type"], limit: 200)
        let url = response.url.map { " from " + redact($0) } ?? ""
        switch error {
        case .httpStatus: return "HTTP \(response.statusCode)\(url): \(preview)"
        case .unauthorized: return "unauthorized (HTTP \(response.statusCode))\(url)"
        case .api(let api): return "API error \(api.code)" + (api.message.map { ": \(redactedLoosely($0))" } ?? "")
        case .unacceptableContentType(let received, _, _): return "unacceptable content type \(received ?? "(none)")\(url): \(preview)"
        default: return error.description
        }
    }

    /// `text` with each double-quoted part redacted as a URL.
    private func redactQuoted(_ text: String) -> String {
        let parts = text.unicodeScalars.split(separator: "\"", omittingEmptySubsequences: false).map { String($0) }
        return parts.enumerated().map { index, part in index.isMultiple(of: 2) ? part : redact(urlText: part) }
            .joined(separator: "\"")
    }
}
