import Foundation

/// Where Switchboard writes its log lines. Implement it to route them to your logging system.
///
/// Called outside every lock: for the request line, on the thread that calls `send` (in a concurrency
/// task when ``Configuration/interceptors`` adapt the request); for the result line, on the thread that
/// finished the send: a global queue (logging moves the end of a send off the transport's queue), a
/// concurrency task with interceptors, or the caller's for a request that could not be built.
public protocol NetworkLogger: Sendable {
    /// Writes one line.
    func log(_ record: LogRecord)
}

/// How much Switchboard logs.
public enum LogMode: Sendable, Hashable {
    /// Nothing.
    case off
    /// One line per failed request, and one per retry.
    case errors
    /// Per request: method, URL, parameters and headers when it starts; status, duration and a body
    /// preview when it ends (what a shared client typically prints under `#ifdef DEBUG`). Secrets are redacted.
    case debug
}

/// One log line.
public struct LogRecord: Sendable {
    /// How serious it is.
    public enum Level: Sendable, Hashable {
        /// What a send did, written only in ``LogMode/debug``: the request as sent, the response, a cancel.
        case debug
        /// Worth knowing in any mode that logs: a retry, with the wait and the error that caused it.
        case info
        /// A send that failed, written in ``LogMode/errors`` and ``LogMode/debug``.
        case error
    }

    /// How serious it is.
    public let level: Level
    /// The send it is about.
    public let requestID: UInt64
    /// The text (secrets already redacted).
    public let message: String

    /// Creates a record (for testing a logger of your own).
    public init(level: Level, requestID: UInt64, message: String) {
        self.level = level
        self.requestID = requestID
        self.message = message
    }
}

/// Prints each line to standard output, prefixed with `[Switchboard #<id>]`.
public struct ConsoleLogger: NetworkLogger {
    /// Creates a console logger.
    public init() {}

    /// Prints `record`.
    public func log(_ record: LogRecord) {
        print("[Switchboard #\(record.requestID)] \(record.message)")
    }
}
