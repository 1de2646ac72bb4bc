import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// This `URLRequest` as a `curl` command line, for reproducing it in a terminal: its method, its
    /// header fields, its `httpBody` and its URL. Not shown: an `httpBodyStream`, and what a transport
    /// adds when it sends the request (cookies from its jar, its default `User-Agent`). A body that is
    /// not UTF-8 text (a gzipped one, say) is shown as `--data-binary @- # N bytes of binary data`.
    /// - Parameter redacted: replace credentials, secret headers and parameters, and URL user info
    ///   with `<redacted>` (the default), so the line is safe to log. A redacted JSON, form or
    ///   multipart body is rewritten (secret values replaced, a multipart body's binary parts shown by
    ///   their size), so the line no longer reproduces the body byte for byte.
    public func cURLDescription(redacted: Bool = true) -> String {
        cURLDescription(redaction: redacted ? .standard : nil)
    }

    /// The `curl` command line, redacted by `redaction` (`nil`: not redacted).
    func cURLDescription(redaction: Redaction?) -> String {
        var parts = ["curl"]
        let method = httpMethod ?? "GET"
        // `-X HEAD` would have curl wait for a body that never comes; `--head` asks for the head only.
        if method == "HEAD" {
            parts.append("--head")
        } else if method != "GET" {
            parts.append("-X \(method)")
        }
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
    /// The `curl` command line for `request` as this dispatcher's build stage makes it now, redacted by
    /// default so it is safe to log (shown as `URLRequest.cURLDescription(redacted:)` shows a request,
    /// also hiding ``Configuration/redactedNames``): the method; the URL (base or CDN URL and path,
    /// query parameters, then the URL filters); the headers (`Accept: application/json` for a `.json`
    /// ``Request/responseFormat``, ``Configuration/defaultHeaders``, the body's or the parameters'
    /// `Content-Type`, ``Request/headers``, ``Request/credentials``, a `Content-Encoding`); then the
    /// ``RequestAdapter``s (``Configuration/adapters``, then the request's ``RequestPipeline/adapters``);
    /// and a body built in memory. A request whose ``Request/makeURLRequest(baseURL:)`` returns a
    /// `URLRequest` is that `URLRequest`, then the adapters.
    ///
    /// It is not the whole request as sent. Left out: what ``Configuration/interceptors`` add (an
    /// ``AuthenticationInterceptor``'s token among them); cookies the transport adds from its jar
    /// (``Transport/addedCookies``); the transport's default `User-Agent` (``UserAgent``); the cache's
    /// `If-None-Match` and `If-Modified-Since` when it revalidates; a download's `Range`, `If-Range` and
    /// `Accept-Encoding: identity`; and a body sent from a file (a ``RequestBody/file(_:contentType:)``
    /// body, or a multipart form over ``Configuration/multipartMemoryThreshold``, assembled on disk),
    /// which gets no `--data-binary` at all. A ``Request/body`` that makes its multipart form each time
    /// it is read (`.multipart { form in … }`) has a new random boundary each time: the line's is not
    /// the one a send uses.
    ///
    /// Making the line builds the request as a send would: a multipart form's files and streams are
    /// read, and a form over the memory threshold is written to a temporary file (removed again) — call
    /// it for logging a request, not in a loop over large uploads.
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` when the request can't be built.
    public func cURLDescription<R: Request>(for request: R, redacted: Bool = true) throws(NetworkError) -> String {
        let settings = settings
        return try RequestBuilder.build(request, configuration: settings).cURLDescription(redaction: redacted ? settings.value.redaction : nil)
    }
}
