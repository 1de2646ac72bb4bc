import Foundation

/// Where Switchboard writes its log lines. Implement it to route them to your logging system.
///
/// Called outside every lock: on the thread that calls `send` for the request line, on the transport's
/// queue for the result line.
public protocol NetworkLogger: Sendable {
    /// Writes one line.
    func log(_ record: LogRecord)
}

/// How much Switchboard logs.
public enum LogMode: Sendable, Hashable {
    /// Nothing.
    case off
    /// One line per failed request.
    case errors
    /// Per request: method, URL, parameters and headers when it starts; status, duration and a body
    /// preview when it ends (what seed 001 prints under `#ifdef DEBUG`). Secrets are redacted.
    case debug
}

/// One log line.
public struct LogRecord: Sendable {
    /// How serious it is.
    public enum Level: Sendable, Hashable { case debug, info, error }

    /// How serious it is.
    public let level: Level
    /// The send it is about.
    public let requestID: UInt64
    /// The text (secrets already redacted).
    public let message: String
}

/// Prints each line to standard output, prefixed with `[Switchboard #<id>]`.
public struct ConsoleLogger: NetworkLogger {
    /// Creates a console logger.
    public init() {}

    public func log(_ record: LogRecord) {
        print("[Switchboard #\(record.requestID)] \(record.message)")
    }
}
