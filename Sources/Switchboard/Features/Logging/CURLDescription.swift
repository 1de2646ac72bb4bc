import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// The request as a `curl` command line, for reproducing it in a terminal.
    /// - Parameter redacted: replace credential headers and secret parameters with `<redacted>`
    ///   (the default), so the line is safe to log.
    public func cURLDescription(redacted: Bool = true) -> String {
        var parts = ["curl"]
        let method = httpMethod ?? "GET"
        if method != "GET" { parts.append("-X \(method)") }
        for (name, value) in (allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            let shown = redacted && Redaction.isSecretHeader(name) ? Redaction.placeholder : value
            parts.append("-H " + shellQuoted("\(name): \(shown)"))
        }
        if let body = httpBody, !body.isEmpty {
            if let text = String(data: body, encoding: .utf8) {
                let shown = redacted ? redactedBody(text, body: body) : text
                parts.append("--data-binary " + shellQuoted(shown))
            } else {
                parts.append("--data-binary @- # \(body.count) bytes of binary data")
            }
        }
        let urlText = url.map { redacted ? Redaction.redact($0) : $0.absoluteString } ?? ""
        parts.append(shellQuoted(urlText))
        return parts.joined(separator: " ")
    }

    private func redactedBody(_ text: String, body: Data) -> String {
        let type = value(forHTTPHeaderField: "Content-Type")?.lowercased() ?? ""
        if type.contains("json"), let json = try? JSON.parse(body) { return Redaction.redact(json).description }
        if type.contains("x-www-form-urlencoded") { return Redaction.redactForm(text) }
        return text
    }

    private func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension Switchboard {
    /// The `curl` command line for `request` as this dispatcher would send it now (filters, headers and
    /// adapters applied), redacted by default so it is safe to log.
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` when the request can't be built.
    public func cURLDescription<R: Request>(for request: R, redacted: Bool = true) throws(NetworkError) -> String {
        try RequestBuilder.build(request, configuration: configuration).cURLDescription(redacted: redacted)
    }
}
