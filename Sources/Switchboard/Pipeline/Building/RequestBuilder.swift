import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns a ``Request`` value into the `URLRequest` to send (step 1 of the flow).
enum RequestBuilder {
    /// Builds the `URLRequest` for `request`.
    ///
    /// Order: the request's own `makeURLRequest` (which skips the next four steps); otherwise the base
    /// URL (or CDN URL) + path, query parameters, URL filters, headers (defaults → encoding → request →
    /// credentials) and the body. Then the request adapters, then a check of every header.
    /// Runs on the thread that calls `send`; calls user code (filters, adapters, `makeURLRequest`)
    /// without holding any lock.
    /// - Throws: ``NetworkError/invalidRequest(reason:)``.
    static func build<R: Request>(_ request: R, configuration: ConfigurationSnapshot) throws(NetworkError) -> URLRequest {
        try adapt(prepare(request, body: request.body, configuration: configuration), for: request, configuration: configuration)
    }

    /// The request before the adapters: built once per send. A class: it travels through every step
    /// of an attempt, and one reference is cheaper to copy than its fields.
    final class Prepared: Sendable {
        let urlRequest: URLRequest
        /// Whether it came from `makeURLRequest` (then it still needs the final check).
        let isCustom: Bool
        /// The body, when it is not the URLRequest's `httpBody`: a file (given, or a multipart form
        /// assembled on disk).
        let body: TransferBody?
        /// An assembled multipart body's temporary file, kept until the send is done with it.
        let temporaryFile: TemporaryFile?
        /// Whether it may carry `Authorization`, `Proxy-Authorization` or `Cookie` (known from our own
        /// header lists when we built it, which is cheaper than asking the `URLRequest`).
        let mayCarryCredentialHeaders: Bool
        /// What `standard` put on `urlRequest`, for the cache key (`nil` for a custom request): reading
        /// it back from a `URLRequest` costs a call into Foundation's object per field on Linux.
        let parts: CacheKey.Parts?

        init(
            urlRequest: URLRequest, isCustom: Bool, body: TransferBody? = nil, temporaryFile: TemporaryFile? = nil, mayCarryCredentialHeaders: Bool = true,
            parts: CacheKey.Parts? = nil
        ) {
            self.urlRequest = urlRequest
            self.isCustom = isCustom
            self.body = body
            self.temporaryFile = temporaryFile
            self.mayCarryCredentialHeaders = mayCarryCredentialHeaders
            self.parts = parts
        }
    }

    /// Builds everything but the adapters (once per send).
    /// - Parameter body: the request's ``Request/body``, read once by the caller.
    static func prepare<R: Request>(_ request: R, body: RequestBody?, configuration: ConfigurationSnapshot) throws(NetworkError) -> Prepared {
        let (base, join) = try baseURL(of: request, configuration: configuration)
        if let custom = try custom(request, base: base) { return Prepared(urlRequest: custom, isCustom: true) }
        return try standard(request, body: body, base: base, join: join, configuration: configuration)
    }

    /// Runs the request adapters on `prepared` (again for every attempt, so an adapter can put a fresh
    /// token on a retry) and checks the result.
    /// - Parameter adapters: the adapters to run, when the caller read them already (a send reads its
    ///   request's `pipeline` once, so what it decided from them holds for every attempt).
    static func adapt<R: Request>(_ prepared: Prepared, for request: R, configuration: ConfigurationSnapshot, adapters given: [any RequestAdapter]? = nil) throws(NetworkError)
        -> URLRequest
    {
        let urlRequest = prepared.urlRequest
        // What `standard` builds is already checked; a custom or adapted request is checked at the end.
        let needsCheck = prepared.isCustom
        let adapters = given ?? configuration.value.adapters + request.pipeline.adapters
        if !adapters.isEmpty {
            var outgoing = try OutgoingRequest(urlRequest)
            for adapter in adapters {
                do {
                    try adapter.adapt(&outgoing, for: request)
                } catch {
                    throw .invalidRequest(reason: "request adapter \(type(of: adapter)) threw: \(error)")
                }
            }
            try check(url: outgoing.url, method: outgoing.method.rawValue, headers: outgoing.headers)
            return outgoing.urlRequest
        }
        if needsCheck {
            guard let url = urlRequest.url else { throw .invalidRequest(reason: "the request has no URL") }
            try check(url: url, method: urlRequest.httpMethod ?? "GET", headers: HTTPHeaders(urlRequest.allHTTPHeaderFields ?? [:]))
        }
        return urlRequest
    }

    /// The base URL: the CDN's for `useCDN` requests, otherwise the request's or the configuration's;
    /// with the configuration's, also its prepared form.
    private static func baseURL<R: Request>(of request: R, configuration: ConfigurationSnapshot) throws(NetworkError) -> (URL?, URLResolver.JoinBase?) {
        guard request.useCDN else {
            if let own = request.baseURL { return (own, nil) }
            return (configuration.value.baseURL, configuration.value.baseJoin)
        }
        if let own = request.cdnURL { return (own, nil) }
        guard let cdn = configuration.value.cdnURL else {
            throw .invalidRequest(reason: "\(R.self) uses the CDN, but neither it nor the configuration has a cdnURL")
        }
        return (cdn, configuration.value.cdnJoin)
    }

    private static func custom<R: Request>(_ request: R, base: URL?) throws(NetworkError) -> URLRequest? {
        do {
            return try request.makeURLRequest(baseURL: base)
        } catch {
            throw .invalidRequest(reason: "makeURLRequest threw: \(error)")
        }
    }

    private static func standard<R: Request>(_ request: R, body raw: RequestBody?, base: URL?, join: URLResolver.JoinBase?, configuration: ConfigurationSnapshot)
        throws(NetworkError)
        -> Prepared
    {
        guard request.method.isToken else {
            throw .invalidRequest(reason: "method \(request.method.rawValue.debugDescription) is not an HTTP token")
        }
        let isAbsolute = URLResolver.isAbsolute(request.path)
        var url = try URLResolver.resolve(path: request.path, base: base, join: join)
        var body: Data?
        var contentType: String?
        var form: MultipartFormData?
        var file: URL?
        switch raw {
        case .multipart(let given)?:
            (form, contentType) = (given, given.contentType)
        case .file(let url, let type)?:
            _ = try MultipartEncoder.regularFileSize(url, label: "the body")
            (file, contentType) = (url, type)
        case .encoded(let value)?:
            (body, contentType) = (try value.encoded(defaults: configuration.value.jsonCoding), "application/json")
        case let other?:
            (body, contentType) = (other.data, other.contentType)
        case nil:
            break
        }
        if let parameters = request.parameters {
            let encoding =
                request.parameterEncoding
                ?? (form != nil ? .form : request.method.encodesParametersInQuery || raw != nil ? .query : configuration.value.bodyEncoding)
            // With a body, parameters go in the query; with a multipart body, they may be its fields.
            if raw != nil, encoding == .json || (encoding == .form && form == nil) {
                throw .invalidRequest(
                    reason: "\(R.self) has a body and parameters encoded as \(encoding); with a body, parameters go in the query (or, for a multipart body, in the form)")
            }
            switch encoding {
            case .query:
                let query = try formEncoded(parameters)
                if !query.isEmpty { url = URLEncodedForm.appendingQuery(query, to: url) }
            case .form where form != nil:
                form = form?.withFields(from: parameters)
            case .form:
                body = Data(try formEncoded(parameters).utf8)
                contentType = "application/x-www-form-urlencoded; charset=utf-8"
            case .json:
                body = parameters.serialized()
                contentType = "application/json"
            }
        }
        var transferBody: TransferBody?
        var temporaryFile: TemporaryFile?
        if let form {
            let encoded = try MultipartEncoder(
                form: form, memoryThreshold: configuration.value.multipartMemoryThreshold, temporaryDirectory: configuration.value.temporaryDirectory
            ).encode()
            switch encoded.body {
            case .data(let data): body = data
            default: (transferBody, temporaryFile) = (encoded.body, encoded.temporaryFile)
            }
        } else if let file {
            transferBody = .file(file)
        }
        let filters = isAbsolute ? [] : configuration.value.urlFilters + request.pipeline.urlFilters
        if !filters.isEmpty {
            for filter in filters {
                do {
                    url = try filter.filter(url, for: request)
                } catch {
                    throw .invalidRequest(reason: "URL filter \(type(of: filter)) threw: \(error)")
                }
            }
            try URLResolver.check(url)  // `resolve` checked the URL before the filters
        }

        var urlRequest = URLRequest(url: url)
        // GET is the default; setting it anyway costs a copy of the request's storage on Linux.
        if request.method != .get { urlRequest.httpMethod = request.method.rawValue }
        urlRequest.timeoutInterval = IdleTimeouts.effective(request.idleTimeout ?? configuration.value.idleTimeout) ?? IdleTimeouts.longest

        var headers = HTTPHeaders()
        if request.responseFormat == .json { headers["Accept"] = "application/json" }
        headers.merge(configuration.value.defaultHeaders)
        if let contentType { headers["Content-Type"] = contentType }
        headers.merge(request.headers)
        if let credentials = request.credentials, headers["Authorization"] == nil {
            headers["Authorization"] = credentials.authorizationHeader
        }
        if let invalid = headers.firstInvalidField {
            throw .invalidRequest(reason: invalid.reason)
        }
        // An in-memory body, unless the request encodes it itself (a body streamed from a file is sent as is).
        if let plain = body, headers["Content-Encoding"] == nil,
            let compressed = try (request.bodyCompression ?? configuration.value.bodyCompression).compress(plain)
        {
            body = compressed
            headers["Content-Encoding"] = "gzip"
        }
        urlRequest.httpBody = body
        // At once: `setValue` per field re-validates, capitalizes and copies the whole table on Linux; the
        // fields are checked above and their names unique (case-insensitively).
        if !headers.isEmpty { urlRequest.allHTTPHeaderFields = headers.dictionary }
        let (sentType, credentialHeaders) = headers.contentTypeAndCredentials
        return Prepared(
            urlRequest: urlRequest, isCustom: false, body: transferBody, temporaryFile: temporaryFile, mayCarryCredentialHeaders: credentialHeaders,
            // The absolute URL, as `URLRequest` keeps it (a URL filter may return a relative one).
            parts: CacheKey.Parts(url: url.absoluteURL, method: request.method.rawValue, body: body, contentType: sentType, handlesCookies: true))
    }

    private static func formEncoded(_ parameters: JSON) throws(NetworkError) -> String {
        do {
            return try URLEncodedForm.encode(parameters)
        } catch {
            throw .invalidRequest(reason: "parameters: \(error)")
        }
    }

    /// Checks the final request: an http(s) URL with a host, a token for a method, and sendable headers.
    static func check(url: URL, method: String, headers: HTTPHeaders) throws(NetworkError) {
        try URLResolver.check(url)
        guard HTTPMethod(rawValue: method).isToken else {
            throw .invalidRequest(reason: "method \(method.debugDescription) is not an HTTP token")
        }
        if let invalid = headers.firstInvalidField {
            throw .invalidRequest(reason: invalid.reason)
        }
    }
}
