import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The monitor behind ``Configuration/logMode``: writes each send's lines, redacted, to
/// ``Configuration/logger``.
struct LoggingMonitor: EventMonitor {
    let mode: LogMode
    let logger: any NetworkLogger
    let redaction: Redaction

    /// The request line of the first attempt: method, URL, headers and parameters (debug only).
    func request(_ send: SendContext, didAdapt request: URLRequest, attempt: Int) {
        guard mode == .debug, attempt == 1 else { return }
        let method = request.httpMethod ?? "GET"
        let url = request.url.map(redaction.redact) ?? "(no URL)"
        var lines = ["→ \(method) \(url)"]
        let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { name, value in
            "\(name): \(redaction.shown(header: name, value: value))"
        }
        if !headers.isEmpty { lines.append("  headers: " + headers.joined(separator: "; ")) }
        if let query = request.url.flatMap({ URLComponents(url: $0, resolvingAgainstBaseURL: true)?.percentEncodedQuery }), !query.isEmpty {
            // The items as the URL line redacts them (read from the query as sent, so a nested secret
            // is seen before decoding hides its encoding), then decoded for reading.
            let parameters = redaction.redactForm(query).split(separator: "&", omittingEmptySubsequences: false).map { item in
                let text = String(item)
                return text.hasSuffix("=" + Redaction.placeholder) ? text : Redaction.leniently(decoding: text)
            }
            lines.append("  parameters: " + parameters.joined(separator: "&"))
        }
        if let body = request.httpBody, !body.isEmpty {
            lines.append("  body: " + redaction.preview(body, contentType: request.value(forHTTPHeaderField: "Content-Type")))
        }
        logger.log(LogRecord(level: .debug, requestID: send.id, message: lines.joined(separator: "\n")))
    }

    /// A retry is coming.
    func request(_ send: SendContext, willRetry attempt: Int, after delay: TimeInterval, because error: NetworkError) {
        let wait = String(format: "%.2f", delay)
        logger.log(LogRecord(level: .info, requestID: send.id, message: "↻ attempt \(attempt) in \(wait) s after: \(redaction.describe(error))"))
    }

    /// The result line: status, duration, body preview (debug), or the error.
    func request(_ send: SendContext, didFinish result: Result<ResponseContext, NetworkError>) {
        let sent = send.urlRequest
        let what = "\(sent?.httpMethod ?? "?") \(sent?.url.map(redaction.redact) ?? "?")"
        let duration = String(format: "%.1f ms", send.elapsed * 1000)
        switch result {
        case .success(let response):
            guard mode == .debug else { return }
            let preview = redaction.preview(response.data, contentType: response.httpResponse.value(forHTTPHeaderField: "Content-Type"))
            logger.log(LogRecord(level: .debug, requestID: send.id, message: "← \(response.httpResponse.statusCode) \(what) (\(duration))\n  response: \(preview)"))
        case .failure(.cancelled):
            guard mode == .debug else { return }
            logger.log(LogRecord(level: .debug, requestID: send.id, message: "✕ cancelled \(what) (\(duration))"))
        case .failure(let error):
            logger.log(LogRecord(level: .error, requestID: send.id, message: "✕ \(what) failed (\(duration)): \(redaction.describe(error))"))
        }
    }
}
