import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response head: either an `HTTPURLResponse` a transport was given (URLSession's), or the status
/// and fields a transport parsed itself (libcurl's), for which the `HTTPURLResponse` is made only when
/// somebody asks for it. On Linux, FoundationNetworking's initializer trims, compares and capitalizes
/// every field through `NSString`: 5–8 µs a response, more than the rest of a small request's
/// handling, and the dispatcher needs only the status, the length and the content type.
///
/// Thread-safe: a parsed head makes its `HTTPURLResponse` once, under a lock (no user code runs there).
final class ResponseHead: Sendable {
    private enum Storage: Sendable {
        case made(HTTPURLResponse)
        /// `response` is locked: made on first ask, and whoever holds the head (stages, observers, the app) may ask from any thread.
        case parsed(url: URL, status: Int, version: String?, fields: [HTTPHeaders.Field], response: Locked<HTTPURLResponse?>)
    }

    private let storage: Storage

    /// A head from an `HTTPURLResponse`.
    init(_ response: HTTPURLResponse) {
        storage = .made(response)
    }

    /// A head from the status line and the fields as received, in order (repeated names kept).
    init(url: URL, statusCode: Int, httpVersion: String?, fields: [HTTPHeaders.Field]) {
        storage = .parsed(url: url, status: statusCode, version: httpVersion, fields: fields, response: Locked(nil))
    }

    var statusCode: Int {
        switch storage {
        case .made(let response): response.statusCode
        case .parsed(_, let status, _, _, _): status
        }
    }

    var url: URL? {
        switch storage {
        case .made(let response): response.url
        case .parsed(let url, _, _, _, _): url
        }
    }

    /// The protocol that carried the response, as the status line named it (`HTTP/1.1`, `HTTP/2`), or
    /// `nil` when the transport doesn't say (FoundationNetworking's `HTTPURLResponse` doesn't).
    var httpVersion: String? {
        switch storage {
        case .made: nil
        case .parsed(_, _, let version, _, _): version
        }
    }

    /// The `HTTPURLResponse` (made now, the first time, for a parsed head).
    var response: HTTPURLResponse {
        switch storage {
        case .made(let response):
            return response
        case .parsed(let url, let status, let version, let fields, let made):
            return made.withLock { made in
                if let made { return made }
                let joined = Dictionary(HTTPHeaders(received: fields).map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
                guard let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: version, headerFields: joined) else {
                    // Unreachable from any input: swift-corelibs-foundation's initializer has no failing
                    // path (URLResponse.swift), and the URL and the three-digit status come from the transfer.
                    preconditionFailure("HTTPURLResponse refused \(url) \(status)")
                }
                made = response
                return response
            }
        }
    }

    /// The value of the field `name` (ASCII case ignored; repeated fields joined with ", ", as
    /// `HTTPURLResponse` joins them).
    func value(_ name: String) -> String? {
        switch storage {
        case .made(let response):
            return response.value(forHTTPHeaderField: name)
        case .parsed(_, _, _, let fields, _):
            var found: String?
            for field in fields where field.name.caseInsensitiveEquals(name) {
                found = found.map { "\($0), \(field.value)" } ?? field.value
            }
            return found
        }
    }

    /// The `Content-Length`, or -1 (as `HTTPURLResponse.expectedContentLength`).
    var expectedContentLength: Int64 {
        switch storage {
        case .made(let response): response.expectedContentLength
        case .parsed: value("Content-Length").flatMap { Int64($0) } ?? -1
        }
    }

    /// Whether a `Content-Encoding` or `Transfer-Encoding` field is there (``TransferRules/isFraming(_:)``).
    var isFramed: Bool {
        switch storage {
        case .made(let response):
            // Two lookups: `allHeaderFields` makes a new dictionary of every field on Linux (about 3×
            // the cost, measured).
            return response.value(forHTTPHeaderField: "Content-Encoding") != nil || response.value(forHTTPHeaderField: "Transfer-Encoding") != nil
        case .parsed(_, _, _, let fields, _):
            return fields.contains { TransferRules.isFraming($0.name) }
        }
    }

    /// The MIME type: the last media type of `Content-Type`, lower-cased, without parameters.
    var mimeType: String? {
        switch storage {
        case .made(let response):
            return MediaType.mimeType(of: response)
        case .parsed:
            guard let type = value("Content-Type") else { return nil }
            // The usual `type/subtype[; parameters]` directly; anything unusual as the HTTPURLResponse
            // reads it, so both transports accept and reject the same types.
            return MediaType.fastMediaType(type) ?? MediaType.mimeType(of: response)
        }
    }

    /// The fields, repeated names joined.
    var headers: HTTPHeaders {
        switch storage {
        case .made(let response): HTTPHeaders(response)
        case .parsed(_, _, _, let fields, _): HTTPHeaders(received: fields)
        }
    }
}
