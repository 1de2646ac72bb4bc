import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Writes one send's log lines, redacted, according to the configuration's ``LogMode``.
final class RequestLog: Sendable {
    let id: UInt64
    let mode: LogMode
    let logger: any NetworkLogger
    let redaction: Redaction
    private let start = DispatchTime.now().uptimeNanoseconds
    private let method = Locked<String?>(nil)
    private let url = Locked<String?>(nil)

    init(id: UInt64, mode: LogMode, logger: any NetworkLogger, redaction: Redaction) {
        self.redaction = redaction
        self.id = id
        self.mode = mode
        self.logger = logger
    }

    /// The request line: method, URL, headers and parameters (debug only).
    func started(_ request: URLRequest) {
        let method = request.httpMethod ?? "GET"
        let url = request.url.map(redaction.redact) ?? "(no URL)"
        self.method.withLock { $0 = method }
        self.url.withLock { $0 = url }
        guard mode == .debug else { return }
        var lines = ["→ \(method) \(url)"]
        let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { name, value in
            "\(name): \(redaction.shown(header: name, value: value))"
        }
        if !headers.isEmpty { lines.append("  headers: " + headers.joined(separator: "; ")) }
        if let query = request.url.flatMap({ URLComponents(url: $0, resolvingAgainstBaseURL: true)?.queryItems }), !query.isEmpty {
            let parameters = query.map { "\($0.name)=\(redaction.isSecret($0.name) ? Redaction.placeholder : $0.value ?? "")" }
            lines.append("  parameters: " + parameters.joined(separator: "&"))
        }
        if let body = request.httpBody, !body.isEmpty {
            lines.append("  body: " + redaction.preview(body, contentType: request.value(forHTTPHeaderField: "Content-Type")))
        }
        logger.log(LogRecord(level: .debug, requestID: id, message: lines.joined(separator: "\n")))
    }

    /// A retry is coming.
    func retrying(attempt: Int, after delay: TimeInterval, because error: NetworkError) {
        guard mode != .off else { return }
        let wait = String(format: "%.2f", delay)
        logger.log(LogRecord(level: .info, requestID: id, message: "↻ attempt \(attempt) in \(wait) s after: \(redaction.describe(error))"))
    }

    /// The result line: status, duration, body preview (debug), or the error.
    func finished<R>(_ result: Result<Response<R>, NetworkError>) {
        guard mode != .off else { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds &- start) / 1e6
        let what = "\(method.withLock { $0 } ?? "?") \(url.withLock { $0 } ?? "?")"
        let duration = String(format: "%.1f ms", elapsed)
        switch result {
        case .success(let response):
            guard mode == .debug else { return }
            let preview = redaction.preview(response.data, contentType: response.httpResponse.value(forHTTPHeaderField: "Content-Type"))
            logger.log(LogRecord(level: .debug, requestID: id, message: "← \(response.statusCode) \(what) (\(duration))\n  response: \(preview)"))
        case .failure(.cancelled):
            guard mode == .debug else { return }
            logger.log(LogRecord(level: .debug, requestID: id, message: "✕ cancelled \(what) (\(duration))"))
        case .failure(let error):
            logger.log(LogRecord(level: .error, requestID: id, message: "✕ \(what) failed (\(duration)): \(redaction.describe(error))"))
        }
    }
}
