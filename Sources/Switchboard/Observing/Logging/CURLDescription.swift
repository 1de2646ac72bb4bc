import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// The request as a `curl` command line, for reproducing it in a terminal.
    /// - Parameter redacted: replace credentials, secret headers and parameters, and URL user info
    ///   with `<redacted>` (the default), so the line is safe to log.
    public func cURLDescription(redacted: Bool = true) -> String {
        cURLDescription(redaction: redacted ? .standard : nil)
    }

    /// The `curl` command line, redacted by `redaction` (`nil`: not redacted).
    func cURLDescription(redaction: Redaction?) -> String {
        var parts = ["curl"]
        let method = httpMethod ?? "GET"
        if method != "GET" { parts.append("-X \(method)") }
        for (name, value) in (allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            let shown = redaction?.shown(header: name, value: value) ?? value
            parts.append("-H " + shellQuoted("\(name): \(shown)"))
        }
        if let body = httpBody, !body.isEmpty {
            // Redacted, a multipart body with binary parts is shown as text with those parts described.
            let shown =
                if let redaction { redaction.redactedText(body, contentType: value(forHTTPHeaderField: "Content-Type")) } else { String(data: body, encoding: .utf8) }
            if let shown {
                parts.append("--data-binary " + shellQuoted(shown))
            } else {
                parts.append("--data-binary @- # \(body.count) bytes of binary data")
            }
        }
        let urlText = url.map { redaction?.redact($0) ?? $0.absoluteString } ?? ""
        parts.append(shellQuoted(urlText))
        return parts.joined(separator: " ")
    }

    /// `text` in single quotes for a POSIX shell, each `'` written as `'\''` (also one followed by a
    /// combining mark, which Foundation's `replacingOccurrences` missed, ending the quoting early).
    private func shellQuoted(_ text: String) -> String {
        "'" + text.replacingASCII { $0 == 0x27 ? "'\\''" : nil } + "'"
    }
}

extension Dispatcher {
    /// The `curl` command line for `request` as this dispatcher would send it now (filters, headers and
    /// adapters applied), redacted by default so it is safe to log.
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` when the request can't be built.
    public func cURLDescription<R: Request>(for request: R, redacted: Bool = true) throws(NetworkError) -> String {
        let settings = settings
        return try RequestBuilder.build(request, configuration: settings).cURLDescription(redaction: redacted ? settings.value.redaction : nil)
    }
}
