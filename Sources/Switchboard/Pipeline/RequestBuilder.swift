import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns a ``Request`` value into the `URLRequest` to send (step 1 of the flow).
enum RequestBuilder {
    /// Builds the `URLRequest` for `request`.
    ///
    /// Order: the request's own `makeURLRequest` (which bypasses everything else); otherwise the URL
    /// (base URL + path), parameters (query, form or JSON), headers, Basic credentials, idle timeout.
    /// - Throws: ``NetworkError/invalidRequest(reason:)``.
    static func build<R: Request>(_ request: R, configuration: Configuration) throws(NetworkError) -> URLRequest {
        let base = request.baseURL ?? configuration.baseURL
        let custom: URLRequest?
        do {
            custom = try request.makeURLRequest(baseURL: base)
        } catch {
            throw .invalidRequest(reason: "makeURLRequest threw: \(error)")
        }
        if let custom {
            try check(custom)
            return custom
        }

        var url = try URLResolver.resolve(path: request.path, base: base)
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.timeoutInterval = configuration.idleTimeout

        var headers = HTTPHeaders()
        if request.responseFormat == .json { headers["Accept"] = "application/json" }
        if let parameters = request.parameters {
            let encoding = request.parameterEncoding
                ?? (request.method.encodesParametersInQuery ? .query : configuration.bodyEncoding)
            switch encoding {
            case .query:
                let query = try formEncoded(parameters)
                if !query.isEmpty {
                    url = URLEncodedForm.appendingQuery(query, to: url)
                    urlRequest.url = url
                }
            case .form:
                urlRequest.httpBody = Data(try formEncoded(parameters).utf8)
                headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
            case .json:
                urlRequest.httpBody = parameters.serialized()
                headers["Content-Type"] = "application/json"
            }
        }
        headers.merge(request.headers)
        if let credentials = request.credentials, headers["Authorization"] == nil {
            headers["Authorization"] = credentials.authorizationHeader
        }
        if let invalid = headers.firstInvalidField {
            throw .invalidRequest(reason: invalid.reason)
        }
        for field in headers { urlRequest.setValue(field.value, forHTTPHeaderField: field.name) }
        return urlRequest
    }

    private static func formEncoded(_ parameters: JSON) throws(NetworkError) -> String {
        do {
            return try URLEncodedForm.encode(parameters)
        } catch {
            throw .invalidRequest(reason: "parameters: \(error)")
        }
    }

    /// Checks a custom `URLRequest`: an http(s) URL with a host, and sendable headers.
    private static func check(_ request: URLRequest) throws(NetworkError) {
        guard let url = request.url else { throw .invalidRequest(reason: "makeURLRequest returned a request without a URL") }
        try URLResolver.check(url)
        let headers = HTTPHeaders((request.allHTTPHeaderFields ?? [:]))
        if let invalid = headers.firstInvalidField {
            throw .invalidRequest(reason: invalid.reason)
        }
    }
}
