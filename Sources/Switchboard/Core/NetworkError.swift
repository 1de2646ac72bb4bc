import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a request failed. Each case carries what you need to act on it; a failure is never disguised
/// as an empty dictionary (the pitfall of the shared-client pattern's common request method).
public enum NetworkError: Error, Sendable, CustomStringConvertible {
    /// The request could not be built or sent: no base URL, an invalid URL, a header with a newline,
    /// parameters the encoding cannot express, or a custom `URLRequest` that threw.
    case invalidRequest(reason: String)
    /// The server answered with a status code outside the acceptable set; carries the status, headers
    /// and body.
    case httpStatus(ErrorResponse)
    /// The server answered 401, or challenged for credentials the request didn't have or that were
    /// rejected. The response's body is empty when the challenge was refused before the body came.
    case unauthorized(ErrorResponse)
    /// The response's MIME type is not acceptable for a JSON request.
    case unacceptableContentType(received: String?, acceptable: Set<String>, response: ErrorResponse)
    /// The body is not valid JSON; `snippet` shows its start.
    case decoding(reason: String, snippet: String)
    /// The JSON doesn't have the shape the request's ``Validation`` requires; says where and what.
    case jsonShape(JSONShapeMismatch)
    /// The API reported an error inside a successful answer (see ``APIErrorCodeHook``).
    case api(APIError)
    /// The body is larger than ``Configuration/maximumResponseSize``.
    case responseTooLarge(limit: Int)
    /// The deadline of the attempt passed (``Request/timeout`` or ``Configuration/timeout``: from its
    /// start to the last byte), whatever the transport was doing.
    case timedOut(after: TimeInterval)
    /// No byte came for the idle timeout's seconds (``Request/idleTimeout``, else a custom
    /// `URLRequest`'s `timeoutInterval`, else ``Configuration/idleTimeout``).
    case idleTimeout(after: TimeInterval)
    /// The request was cancelled (``RequestHandle/cancel()``, ``Dispatcher/cancelAll()`` or the
    /// calling Swift task's cancellation).
    case cancelled
    /// The connection failed: refused, reset, lost mid-body (`networkConnectionLost`), a body that
    /// can't be decompressed (`cannotDecodeContentData`), too many redirects, a redirect to a scheme
    /// that isn't allowed (`unsupportedURL`), DNS, TLS. Often worth retrying (``RetryPolicy``).
    case transport(URLError)
    /// The response breaks HTTP's message syntax (RFC 9112), so none of it can be trusted: a status
    /// line without a three-digit code, a header field name that is not a token or a line without a
    /// colon, a `Content-Length` that is not one non-negative decimal number (or two that disagree), a
    /// broken chunked encoding, a redirect without a `Location`, something that isn't HTTP at all. The
    /// send ends as soon as the head shows it, and retrying won't help; `reason` says what was wrong.
    case malformedResponse(reason: String)
    /// A download's destination or resume went wrong although the server answered (see
    /// ``DownloadError``): a file already at the destination, a name that would leave its folder, a
    /// resume that can't be trusted, a file of the wrong length.
    case download(DownloadError)
    /// A TLS connection was refused under the host's ``TrustPolicy`` (``Configuration/serverTrust``):
    /// which host, which check (chain, validity, host name, public-key pin, client certificate), and the
    /// TLS library's words. No request went to that host, except where a TLS 1.3 server refuses a
    /// client certificate after the handshake (the request was written by then). Fix the policy or
    /// the server; a retry won't help.
    case serverTrustFailed(TrustFailure)
    /// The send's trust setting (``Configuration/serverTrust``) can't be applied, so nothing was sent:
    /// the transport can't honour it (any policy but the system's on the URLSession transport; a
    /// libcurl older than 7.77 or built without OpenSSL for CA blobs and client certificates), or it
    /// is invalid (no anchors, a wildcard development host). Never a silent fallback to weaker trust.
    case unsupportedTrustPolicy(reason: String)
    /// The proxy couldn't carry the request, so it didn't reach the server: the proxy refused the
    /// connection or the `CONNECT` tunnel, asked for credentials it wasn't given (407), or the proxy
    /// setting can't be applied here (an explicit proxy on the URLSession transport on Linux, or
    /// ``ProxySetting/none`` there while a proxy variable is set; an https or SOCKS proxy in the
    /// environment). `reason` names the proxy (never its password) and what went wrong.
    case proxyFailed(reason: String)

    /// The HTTP status code, when the server answered.
    public var statusCode: Int? { errorResponse?.statusCode }

    /// The server's answer for status, content-type and auth failures.
    public var errorResponse: ErrorResponse? {
        switch self {
        case .httpStatus(let response), .unauthorized(let response): response
        case .unacceptableContentType(_, _, let response): response
        case .api(let error): error.response
        default: nil
        }
    }

    /// Whether this is ``cancelled``.
    public var isCancelled: Bool {
        if case .cancelled = self { return true }
        return false
    }

    /// Whether this is ``unauthorized(_:)``: a 401.
    public var isUnauthorized: Bool {
        if case .unauthorized = self { return true }
        return false
    }

    /// One line for logs and transcripts.
    public var description: String {
        switch self {
        case .invalidRequest(let reason): "invalid request: \(reason)"
        case .httpStatus(let response):
            "HTTP \(response.statusCode): \(Redaction.standard.preview(response.body, contentType: response.headers["Content-Type"], limit: 200))"
        case .unauthorized(let response): "unauthorized (HTTP \(response.statusCode))"
        case .unacceptableContentType(let received, let acceptable, _):
            "unacceptable content type \(received ?? "(none)"), expected one of \(acceptable.sorted().joined(separator: ", "))"
        case .decoding(let reason, let snippet): "undecodable body: \(reason); body starts \(snippet.debugDescription)"
        case .jsonShape(let mismatch): "unexpected JSON: \(mismatch)"
        case .api(let error): error.description
        case .responseTooLarge(let limit): "response larger than \(limit) bytes"
        case .timedOut(let seconds): "timed out after \(seconds) s"
        case .idleTimeout(let seconds): "no data for \(seconds) s (idle timeout)"
        case .cancelled: "cancelled"
        case .transport(let error): "transport error \(error.code.rawValue): \(error.localizedDescription)"
        case .malformedResponse(let reason): "malformed response: \(reason)"
        case .download(let error): "download failed: \(error)"
        case .serverTrustFailed(let failure): "server trust failed: \(failure)"
        case .unsupportedTrustPolicy(let reason): "trust policy can't be applied: \(reason)"
        case .proxyFailed(let reason): "proxy failed: \(reason)"
        }
    }
}

/// What the server sent with a failing status: enough to show the error or act on it.
public struct ErrorResponse: Sendable {
    /// The HTTP status code.
    public let statusCode: Int
    /// The response headers.
    public let headers: HTTPHeaders
    /// The body as received (may be empty).
    public let body: Data
    /// The URL that answered.
    public let url: URL?

    /// Creates an error response.
    public init(statusCode: Int, headers: HTTPHeaders, body: Data, url: URL?) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.url = url
    }

    /// The body decoded as JSON, or `nil` when it isn't JSON.
    public var json: JSON? { try? JSON.parse(body) }

    /// The body as UTF-8 text (invalid bytes replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The first 200 characters of the body, for messages.
    public var bodyPreview: String { String(text.prefix(200)) }
}

extension ErrorResponse {
    init(_ response: HTTPURLResponse, body: Data) {
        self.init(statusCode: response.statusCode, headers: HTTPHeaders(response), body: body, url: response.url)
    }
}

extension HTTPHeaders {
    /// The header fields of a response. Linear in their number.
    public init(_ response: HTTPURLResponse) {
        var fields: [Field] = []
        fields.reserveCapacity(response.allHeaderFields.count)
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields.append(Field(name: name, value: value)) }
        }
        self.init(fields.sorted { $0.name < $1.name })
    }
}
