import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Keeps secrets out of logs: credential headers, and parameters whose names say they are secret.
enum Redaction {
    /// What stands in for a secret.
    static let placeholder = "<redacted>"

    /// Headers whose values are never logged.
    static let secretHeaders: Set<String> = ["authorization", "cookie", "set-cookie", "proxy-authorization"]

    /// Whether a parameter named `name` holds a secret (its name contains password, token or secret).
    static func isSecretParameter(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.contains("password") || lower.contains("token") || lower.contains("secret")
    }

    static func isSecretHeader(_ name: String) -> Bool {
        secretHeaders.contains(name.lowercased())
    }

    /// `json` with the values of secret keys (secret parameter names, credential header names) replaced,
    /// at any depth.
    static func redact(_ json: JSON) -> JSON {
        switch json {
        case .object(let object):
            var copy: [String: JSON] = [:]
            for (key, value) in object {
                copy[key] = isSecretParameter(key) || isSecretHeader(key) ? .string(placeholder) : redact(value)
            }
            return .object(copy)
        case .array(let items):
            return .array(items.map(redact))
        default:
            return json
        }
    }

    /// `url` as text with the values of secret query items replaced. Works on the text (setting a
    /// query with `<` or `>` on URLComponents traps on Linux).
    static func redact(_ url: URL) -> String {
        let text = url.absoluteString
        guard let mark = text.firstIndex(of: "?") else { return text }
        let afterQuery = text[text.index(after: mark)...]
        let fragmentStart = afterQuery.firstIndex(of: "#") ?? afterQuery.endIndex
        let query = String(afterQuery[..<fragmentStart])
        let redacted = redactForm(query)
        guard redacted != query else { return text }
        return String(text[...mark]) + redacted + String(afterQuery[fragmentStart...])
    }

    /// A readable, redacted preview of a body: JSON and form bodies have secret fields replaced; other
    /// text is cut to `limit` characters; binary data is described by its size.
    static func preview(_ body: Data?, contentType: String?, limit: Int = 500) -> String {
        guard let body, !body.isEmpty else { return "(empty)" }
        let type = contentType?.lowercased() ?? ""
        var text: String
        if let json = try? JSON.parse(body) {
            text = redact(json).description
        } else if type.contains("x-www-form-urlencoded") {
            text = redactForm(String(decoding: body, as: UTF8.self))
        } else if let string = String(data: body, encoding: .utf8) {
            text = string
        } else {
            return "(\(body.count) bytes of binary data)"
        }
        if text.count > limit { text = String(text.prefix(limit)) + "… (\(body.count) bytes)" }
        return text
    }

    /// A form body with secret fields' values replaced.
    static func redactForm(_ form: String) -> String {
        form.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            return isSecretParameter(decodedName(name)) ? "\(name)=\(placeholder)" : String(pair)
        }.joined(separator: "&")
    }

    /// An error's description with any body it carries redacted (an undecodable body's snippet is left
    /// out: it can't be parsed to find its secrets).
    static func describe(_ error: NetworkError) -> String {
        if case .decoding(let reason, let snippet) = error {
            return "undecodable body (\(snippet.utf8.count)+ bytes): \(reason)"
        }
        guard let response = error.errorResponse else { return error.description }
        let preview = preview(response.body, contentType: response.headers["Content-Type"], limit: 200)
        switch error {
        case .httpStatus: return "HTTP \(response.statusCode): \(preview)"
        case .api(let api): return "API error \(api.code)" + (api.message.map { ": \($0)" } ?? "")
        default: return error.description
        }
    }

    private static func decodedName(_ name: String) -> String {
        name.removingPercentEncoding ?? name
    }
}
