import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A successful answer to a request: the decoded JSON, the raw bytes, the HTTP response, where it came
/// from and how long it took.
///
/// ```swift
/// let response = try await Dispatcher.shared.response(for: GetUserInfo(id: "123"))
/// response.json["user"]["name"].string   // "User 123"
/// let user = try response.decode(User.self, at: "user")
/// ```
public struct Response<R: Request>: Sendable {
    /// The request this answers.
    public let request: R
    /// Everything but the request and the send's numbers: what the pipeline carries from the transport
    /// to delivery, as one reference of a non-generic type (a copy is one retain; no generic metadata
    /// to look up, no value witnesses to call).
    let parts: ResponseParts
    /// The HTTP response.
    public var httpResponse: HTTPURLResponse { parts.head.response }
    /// The head, made into an `HTTPURLResponse` only when asked (see ``ResponseHead``).
    var head: ResponseHead { parts.head }
    /// The body, as received; empty for a download (see ``fileURL``).
    public var data: Data { parts.data }
    /// For a ``DownloadRequest``, the downloaded file (its destination); otherwise `nil`.
    public var fileURL: URL? { parts.fileURL }
    /// The body as ``JSON``: for a request whose ``Request/Value`` is `JSON` (the default), the tree
    /// decoded once before delivery; for a typed request, parsed from ``data`` each time it is read
    /// (read ``value`` instead). `.null` for an empty body, a `.data` request, or a typed request's
    /// body that isn't JSON.
    public var json: JSON { parts.json }
    /// The body decoded into the request's ``Request/Value``, once, in the pipeline's decode stage (off
    /// the main thread): a `User` for a request whose `Value` is `User`; for the default, ``JSON``, the
    /// same as ``json``.
    public var value: R.Value {
        if let value = parts.value as? R.Value { return value }
        // Stage 7 (and every initializer) sets `value` unless `R.Value` is `JSON`.
        return parts.json as! R.Value
    }
    /// The protocol that carried the response: `HTTP/1.1` or `HTTP/2` on the libcurl transport (`HTTP/2`
    /// when an https server agreed to it); `nil` on the URLSession transport (FoundationNetworking
    /// doesn't say) and for a response from the cache.
    public var httpVersion: String? { parts.head.httpVersion }
    /// Where the response came from.
    public var source: Source { Source(parts.origin) }
    /// When it started, when the first byte came, how long it took (the last attempt).
    public var timing: Timing { parts.timing }
    /// How many attempts it took (more than 1 after retries, see ``RetryPolicy``).
    public internal(set) var attempts: Int
    /// The send it answers: its ``RequestHandle/id`` and the ``RequestEvent/sendID`` of its events
    /// (0 for a response made outside a dispatcher).
    public internal(set) var sendID: UInt64

    /// Where a response came from.
    public enum Source: Sendable, Hashable {
        /// From the server.
        case network
        /// From the response cache, without asking the server (a fresh entry, or a `cached` event).
        case cache
        /// From the response cache after the server answered `304 Not Modified` to a conditional request.
        case revalidated
        /// From the response cache because the network failed (``CachePolicy/Mode/networkElseCache``):
        /// it may be out of date.
        case stale

        init(_ origin: ResponseOrigin) {
            switch origin {
            case .network: self = .network
            case .cache: self = .cache
            case .revalidated: self = .revalidated
            case .stale: self = .stale
            }
        }

        var origin: ResponseOrigin {
            switch self {
            case .network: .network
            case .cache: .cache
            case .revalidated: .revalidated
            case .stale: .stale
            }
        }
    }

    /// Creates a response (for tests and custom transports).
    public init(request: R, httpResponse: HTTPURLResponse, data: Data, json: JSON, source: Source = .network, timing: Timing, fileURL: URL? = nil)
    where R.Value == JSON {
        self.init(request: request, parts: ResponseParts(head: ResponseHead(httpResponse), data: data, fileURL: fileURL, json: json, origin: source.origin, timing: timing))
    }

    /// Creates a response to a typed request (for tests and custom transports).
    public init(request: R, httpResponse: HTTPURLResponse, data: Data, value: R.Value, source: Source = .network, timing: Timing, fileURL: URL? = nil) {
        self.init(
            request: request,
            parts: ResponseParts(
                head: ResponseHead(httpResponse), data: data, fileURL: fileURL, json: R.Value.self == JSON.self ? value as? JSON : nil, value: value,
                origin: source.origin, timing: timing))
    }

    init(request: R, parts: ResponseParts, attempts: Int = 1, sendID: UInt64 = 0) {
        self.request = request
        self.parts = parts
        self.attempts = attempts
        self.sendID = sendID
    }

    /// The HTTP status code.
    public var statusCode: Int { head.statusCode }

    /// The response headers.
    public var headers: HTTPHeaders { head.headers }

    /// The JSON object as a Foundation dictionary (`[String: Any]`), or `nil` when the body isn't an object.
    /// Never an empty dictionary standing in for a failure.
    public var dictionary: [String: Any]? { json.foundationObject as? [String: Any] }

    /// Decodes the body (or the value at `key` of a top-level object) with `JSONDecoder`, here, on the
    /// calling thread. Prefer a ``Request/Value``: it is decoded once, off the main thread, with
    /// ``Configuration/jsonCoding``'s strategies, which this method doesn't read.
    /// - Parameters:
    ///   - type: the type to decode.
    ///   - key: a top-level key to decode from instead of the whole body.
    ///   - decoder: the decoder to use (a plain `JSONDecoder` by default, not the configuration's).
    /// - Throws: ``NetworkError/decoding(reason:snippet:)`` naming what didn't match.
    public func decode<T: Decodable>(_ type: T.Type = T.self, at key: String? = nil, decoder: JSONDecoder = JSONDecoder()) throws(NetworkError) -> T {
        do {
            if let key {
                let value = json[key]
                if value.isNull { throw NetworkError.decoding(reason: "no value at key \(key.debugDescription)", snippet: snippet) }
                return try decoder.decode(T.self, from: value.serialized())
            }
            return try decoder.decode(T.self, from: data)
        } catch let error as NetworkError {
            throw error
        } catch {
            throw NetworkError.decoding(reason: "\(T.self): \(error)", snippet: snippet)
        }
    }

    /// The body's start for an error message, redacted by the standard rules.
    private var snippet: String { Redaction.standard.snippet(of: data, limit: 200) }
}

/// A ``Response`` without its request: the pipeline's form of a response, from validation to delivery.
/// Immutable, so shared: a class, since the pipeline hands it on in `Result`s several times a send.
final class ResponseParts: Sendable {
    let head: ResponseHead
    let data: Data
    let fileURL: URL?
    /// The tree parsed from the body (`nil` when none was: a typed request's, unless a shape or hooks
    /// needed it; a `.data` request's). ``json`` parses when read.
    let parsed: JSON?
    /// Whether the body is read as JSON (`false` for a `.data` request: its ``json`` is `.null`).
    let readsBodyAsJSON: Bool
    /// A typed request's ``Request/Value`` (stage 7); `nil` when the value is ``JSON``.
    let value: (any Sendable)?
    let origin: ResponseOrigin
    let timing: Timing

    init(
        head: ResponseHead, data: Data, fileURL: URL?, json: JSON?, readsBodyAsJSON: Bool = true, value: (any Sendable)? = nil, origin: ResponseOrigin,
        timing: Timing
    ) {
        self.head = head
        self.data = data
        self.fileURL = fileURL
        self.parsed = json
        self.readsBodyAsJSON = readsBodyAsJSON
        self.value = value
        self.origin = origin
        self.timing = timing
    }

    /// The same parts with a typed request's decoded value.
    func with(value: any Sendable) -> ResponseParts {
        ResponseParts(head: head, data: data, fileURL: fileURL, json: parsed, readsBodyAsJSON: readsBodyAsJSON, value: value, origin: origin, timing: timing)
    }

    /// The body as ``JSON``: the tree stage 7 parsed, or (a typed request's) parsed now; `.null` for an
    /// empty body, a `.data` request, or a body that isn't JSON.
    var json: JSON { Self.json(parsed, of: data, readsBodyAsJSON) }

    /// `parsed`, or `data` parsed now when it is read as JSON.
    static func json(_ parsed: JSON?, of data: Data, _ readsBodyAsJSON: Bool) -> JSON {
        if let parsed { return parsed }
        guard readsBodyAsJSON, !data.isEmpty else { return .null }
        return (try? JSON.parse(data)) ?? .null
    }
}

/// ``Response/Source`` outside the generic type, for the pipeline.
enum ResponseOrigin: Sendable {
    case network, cache, revalidated, stale
}

/// When a request ran.
public struct Timing: Sendable, Hashable {
    /// When it was sent.
    public let start: Date
    /// Time from send to the response head, when known.
    public let timeToFirstByte: TimeInterval?
    /// Time from send to the last byte.
    public let duration: TimeInterval

    /// Creates a timing.
    public init(start: Date, timeToFirstByte: TimeInterval?, duration: TimeInterval) {
        self.start = start
        self.timeToFirstByte = timeToFirstByte
        self.duration = duration
    }
}

/// How far a transfer has come. Byte counts are Switchboard's own (URLSession's totals are unreliable
/// on Linux); `expected…` is `nil` when unknown, or when the body is compressed (its Content-Length is
/// the compressed size).
public struct TransferProgress: Sendable, Hashable {
    /// Body bytes sent so far.
    public var bytesSent: Int64
    /// Body bytes to send, when known.
    public var expectedBytesToSend: Int64?
    /// Body bytes received so far.
    public var bytesReceived: Int64
    /// Body bytes to receive, when known.
    public var expectedBytesToReceive: Int64?

    /// Creates a progress value.
    public init(bytesSent: Int64 = 0, expectedBytesToSend: Int64? = nil, bytesReceived: Int64 = 0, expectedBytesToReceive: Int64? = nil) {
        self.bytesSent = bytesSent
        self.expectedBytesToSend = expectedBytesToSend
        self.bytesReceived = bytesReceived
        self.expectedBytesToReceive = expectedBytesToReceive
    }

    /// The fraction received (0…1), when the expected size is known.
    public var fractionReceived: Double? {
        guard let expected = expectedBytesToReceive, expected > 0 else { return nil }
        return min(1, Double(bytesReceived) / Double(expected))
    }

    /// The fraction sent (0…1), when the expected size is known.
    public var fractionSent: Double? {
        guard let expected = expectedBytesToSend, expected > 0 else { return nil }
        return min(1, Double(bytesSent) / Double(expected))
    }
}
