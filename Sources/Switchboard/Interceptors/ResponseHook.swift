import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cross-cutting handling of every result: turn a successful answer into a failure (an API that reports
/// errors inside a 200 body), or map a failure (token expiry, error translation).
///
/// ``didSucceed(_:)`` runs on each attempt's response once it passed validation (the configuration's
/// hooks, then the request's), before the retry decision and the response cache: a response a hook
/// rejects is a failed attempt, which interceptors and the ``RetryPolicy`` see and the cache never
/// stores. A stored response meets the hooks each time it answers, not when it is only looked up: a
/// fresh hit, the early answer of ``CachePolicy/Mode/cachedThenLoad``, the body of a `304`, the
/// offline fallback of ``CachePolicy/Mode/networkElseCache`` (under `cachedThenLoad`, a `304` makes
/// the stored response answer twice, early and finally, and the hooks see it both times). A stored response the hooks reject is not used: the send goes
/// to the network as on a miss (or, for the fallback, the network's failure stands).
/// ``Dispatcher/cachedResponse(for:allowingExpired:)`` reads the store without the hooks.
/// ``didFail(_:for:)`` maps the send's final failure (after retries; a cancel is not mapped), before
/// ``RequestAccessory/willStop(_:error:)`` and before any observer or closure hears it.
///
/// Hooks never run on the transport's queue (so a slow hook delays no other transfer) nor under a
/// lock: on a global dispatch queue after a transfer; in a concurrency task after a disk read of the
/// cache (or of the memory cache for a typed request) or when ``Configuration/interceptors`` ran first
/// or decided the retry (so don't block in a hook); on the thread that called `send` when the memory
/// cache answered a request whose ``Request/Value`` is ``JSON``, or the request could not be built.
/// For a typed request the hooks run before its value is decoded: a hook may accept a response whose
/// decode then fails the attempt (``didFail(_:for:)`` then maps that error). Both methods have default
/// implementations.
public protocol ResponseHook: Sendable {
    /// Inspects a response that passed validation. Throw to make the send fail with that error.
    func didSucceed(_ response: ResponseContext) throws(NetworkError)

    /// Returns the error to report instead of `error` (the default returns `error`).
    func didFail(_ error: NetworkError, for request: any Request) -> NetworkError
}

extension ResponseHook {
    public func didSucceed(_ response: ResponseContext) throws(NetworkError) {}
    public func didFail(_ error: NetworkError, for request: any Request) -> NetworkError { error }
}

/// What a hook sees of a successful response.
public struct ResponseContext: Sendable {
    /// The request.
    public let request: any Request
    /// The HTTP response.
    public let httpResponse: HTTPURLResponse
    /// The body.
    public let data: Data
    /// The body as JSON. For a typed request (``Request/Value`` other than ``JSON``) the body is parsed
    /// when this is read, each time: read it once.
    public var json: JSON { ResponseParts.json(tree, of: data, readsBodyAsJSON) }
    private let tree: JSON?
    private let readsBodyAsJSON: Bool
    /// The protocol that carried the response (`HTTP/1.1`, `HTTP/2`), or `nil` where the transport
    /// doesn't say (see ``Response/httpVersion``).
    public let httpVersion: String?

    /// Creates a context (for testing a hook of your own).
    public init(request: any Request, httpResponse: HTTPURLResponse, data: Data, json: JSON, httpVersion: String? = nil) {
        self.request = request
        self.httpResponse = httpResponse
        self.data = data
        self.tree = json
        self.readsBodyAsJSON = true
        self.httpVersion = httpVersion
    }

    init(request: any Request, parts: ResponseParts) {
        self.request = request
        httpResponse = parts.head.response
        data = parts.data
        tree = parts.parsed
        readsBodyAsJSON = parts.readsBodyAsJSON
        httpVersion = parts.head.httpVersion
    }

    /// The answer as an ``ErrorResponse``, for errors a hook throws.
    public var errorResponse: ErrorResponse { ErrorResponse(httpResponse, body: data) }
}

/// Turns a 200 whose JSON body carries an error code into ``NetworkError/api(_:)``, keeping the code and
/// message: a pitfall of the shared-client pattern (`{"errorCode": 3, "message": "session expired"}`).
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.responseHooks.append(APIErrorCodeHook(codeKey: "errorCode")) }
/// ```
/// A body without the code key, or whose code is one of `successCodes`, passes.
public struct APIErrorCodeHook: ResponseHook {
    /// The key of the code in a top-level object.
    public var codeKey: String
    /// The key of the message.
    public var messageKey: String
    /// Codes that mean success.
    public var successCodes: Set<JSON>

    /// Creates the hook.
    public init(codeKey: String = "errorCode", messageKey: String = "message", successCodes: Set<JSON> = [0, "0"]) {
        self.codeKey = codeKey
        self.messageKey = messageKey
        self.successCodes = successCodes
    }

    /// Throws ``NetworkError/api(_:)`` when the body's code is present and not a success code.
    public func didSucceed(_ response: ResponseContext) throws(NetworkError) {
        let code = response.json[codeKey]
        guard !code.isNull, !successCodes.contains(code) else { return }
        throw .api(APIError(code: code, message: response.json[messageKey].string, response: response.errorResponse))
    }
}

/// An error the API reported inside a successful HTTP answer.
public struct APIError: Sendable, CustomStringConvertible {
    /// The code as the API sent it.
    public let code: JSON
    /// The message, when there is one.
    public let message: String?
    /// The whole answer.
    public let response: ErrorResponse

    /// Creates an API error.
    public init(code: JSON, message: String?, response: ErrorResponse) {
        self.code = code
        self.message = message
        self.response = response
    }

    /// The code as an integer, when it is one (or a string holding one).
    public var intCode: Int? { code.int ?? code.string.flatMap { Int($0) } }

    /// `API error 3: session expired`
    public var description: String { "API error \(code)" + (message.map { ": \($0)" } ?? "") }
}
