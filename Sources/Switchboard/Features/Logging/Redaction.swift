import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Keeps secrets out of logs and cURL descriptions.
///
/// Redacted: the values of `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie`; of any
/// header, query parameter, form field or JSON key whose name contains `token`, `key`, `secret`, `auth`,
/// `session`, `password`, `passwd`, `signature` or `credential` (case-insensitive); of the names in
/// ``Configuration/redactedNames``; and the user info of a URL (`https://user:password@host`).
struct Redaction: Sendable {
    /// What stands in for a secret.
    static let placeholder = "<redacted>"

    /// Headers whose values are never shown, whatever the name rule says.
    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Parts of a name that mark it as secret.
    static let secretWords = ["token", "key", "secret", "auth", "session", "password", "passwd", "signature", "credential"]

    /// The rules with no extra names.
    static let standard = Redaction(extraNames: [])

    /// Extra names (lower-cased) whose values are redacted.
    let extraNames: Set<String>

    init(extraNames: Set<String>) {
        self.extraNames = Set(extraNames.map { $0.lowercased() })
    }

    /// Whether a parameter, JSON key or header named `name` holds a secret.
    func isSecret(_ name: String) -> Bool {
        let lower = name.lowercased()
        return Self.secretHeaders.contains(lower) || extraNames.contains(lower) || Self.secretWords.contains { lower.contains($0) }
    }

    /// `json` with the values of secret keys replaced, at any depth.
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
        default:
            return json
        }
    }

    /// `url` as text with its user info and the values of secret query items replaced. Works on the
    /// text (setting a query with `<` or `>` on URLComponents traps on Linux).
    func redact(_ url: URL) -> String {
        var text = url.absoluteString
        if let schemeEnd = text.range(of: "://") {
            let authorityEnd = text[schemeEnd.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
            if let at = text[schemeEnd.upperBound..<authorityEnd].lastIndex(of: "@") {
                text.replaceSubrange(schemeEnd.upperBound..<at, with: Self.placeholder)
            }
        }
        guard let mark = text.firstIndex(of: "?") else { return text }
        let afterQuery = text[text.index(after: mark)...]
        let fragmentStart = afterQuery.firstIndex(of: "#") ?? afterQuery.endIndex
        let query = String(afterQuery[..<fragmentStart])
        let redacted = redactForm(query)
        guard redacted != query else { return text }
        return String(text[...mark]) + redacted + String(afterQuery[fragmentStart...])
    }

    /// A header's value as it may be shown.
    func shown(header name: String, value: String) -> String {
        isSecret(name) ? Self.placeholder : value
    }

    /// A readable, redacted preview of a body: JSON and form bodies have secret fields replaced; other
    /// text is cut to `limit` characters; binary data is described by its size.
    func preview(_ body: Data?, contentType: String?, limit: Int = 500) -> String {
        guard let body, !body.isEmpty else { return "(empty)" }
        var text: String
        if let shown = redactedText(body, contentType: contentType) {
            text = shown
        } else {
            return "(\(body.count) bytes of binary data)"
        }
        if text.count > limit { text = String(text.prefix(limit)) + "… (\(body.count) bytes)" }
        return text
    }

    /// A body as redacted text: JSON and form bodies with secret fields replaced (a form is recognised
    /// by its content type, or by its `name=value&…` look); `nil` for binary data.
    func redactedText(_ body: Data, contentType: String?) -> String? {
        if let json = try? JSON.parse(body) { return redact(json).description }
        guard let text = String(data: body, encoding: .utf8) else { return nil }
        let type = contentType?.lowercased() ?? ""
        if type.contains("x-www-form-urlencoded") || Self.looksLikeForm(text) { return redactForm(text) }
        return text
    }

    /// A form (or query) with secret fields' values replaced.
    func redactForm(_ form: String) -> String {
        form.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            return isSecret(name.removingPercentEncoding ?? name) ? "\(name)=\(Self.placeholder)" : String(pair)
        }.joined(separator: "&")
    }

    /// An error's description with any body it carries redacted (an undecodable body's snippet is left
    /// out: it can't be parsed to find its secrets).
    func describe(_ error: NetworkError) -> String {
        if case .decoding(let reason, let snippet) = error {
            return "undecodable body (\(snippet.utf8.count)+ bytes): \(reason)"
        }
        guard let response = error.errorResponse else { return error.description }
        let preview = preview(response.body, contentType: response.headers["Content-Type"], limit: 200)
        let url = response.url.map { " from " + redact($0) } ?? ""
        switch error {
        case .httpStatus: return "HTTP \(response.statusCode)\(url): \(preview)"
        case .unauthorized: return "unauthorized (HTTP \(response.statusCode))\(url)"
        case .api(let api): return "API error \(api.code)" + (api.message.map { ": \($0)" } ?? "")
        case .unacceptableContentType(let received, _, _): return "unacceptable content type \(received ?? "(none)")\(url): \(preview)"
        default: return error.description
        }
    }

    /// Whether `text` is `name=value` pairs joined by `&` (no spaces or newlines).
    private static func looksLikeForm(_ text: String) -> Bool {
        !text.isEmpty && text.contains("=") && !text.contains(where: { $0 == " " || $0 == "\n" || $0 == "\r" })
    }
}
