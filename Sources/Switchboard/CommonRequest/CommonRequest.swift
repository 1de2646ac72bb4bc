import Foundation

/// The request type behind ``Dispatcher/request(_:parameters:method:completion:)``, the one-call
/// "common request" of the shared-client pattern: any path, any parameters, `GET` or `POST`, no type of its own.
///
/// Observers of ad-hoc calls register for `CommonRequest.self` and tell the calls apart by path:
///
/// ```swift
/// Dispatcher.shared.addObserver(self, for: CommonRequest.self) { screen, event in
///     guard event.request.path == "/api.php", case .succeeded(let response) = event.kind else { return }
///     screen.show(response.json["list"])
/// }
/// ```
public struct CommonRequest: Request, Hashable {
    /// The path (or absolute URL).
    public let path: String
    /// The parameters: the query for `GET` (and `HEAD`, `DELETE`), the body (``Configuration/bodyEncoding``)
    /// for `POST` (and other methods).
    public let parameters: JSON?
    /// The method.
    public let method: HTTPMethod

    /// Creates a common request.
    public init(path: String, parameters: JSON? = nil, method: HTTPMethod = .get) {
        self.path = path
        self.parameters = parameters
        self.method = method
    }
}

extension Dispatcher {
    /// Sends an ad-hoc request and hands back its JSON: the shared-client pattern's
    /// `defaultRequestWithUrl:withParameters:withMethod:withBlock:`, minus its pitfall: a failure is a
    /// typed ``NetworkError``, never an empty dictionary.
    ///
    /// ```swift
    /// Dispatcher.shared.request("/api.php", parameters: ["type": "List", "start": 0, "end": 3]) { result in
    ///     switch result {
    ///     case .success(let json): print(json["list"])
    ///     case .failure(let error): print(error)
    ///     }
    /// }
    /// ```
    /// Observers of ``CommonRequest`` hear it too.
    /// - Parameters:
    ///   - path: a path below the base URL, or an absolute URL.
    ///   - parameters: a JSON object; the query for `GET`, the body for `POST` (form, or JSON when
    ///     ``Configuration/bodyEncoding`` is `.json`, as such a shared client often has it).
    ///   - method: the method; `GET` by default.
    ///   - completion: called once with the decoded body or the error, on ``Configuration/callbackQueue``.
    /// - Returns: a handle to cancel the call.
    @discardableResult
    public func request(
        _ path: String,
        parameters: JSON? = nil,
        method: HTTPMethod = .get,
        completion: @escaping @Sendable (Result<JSON, NetworkError>) -> Void
    ) -> RequestHandle {
        send(CommonRequest(path: path, parameters: parameters, method: method)) { result in
            completion(result.map(\.json))
        }
    }

    /// Sends an ad-hoc request and returns its decoded JSON.
    /// - Throws: ``NetworkError``.
    public func request(_ path: String, parameters: JSON? = nil, method: HTTPMethod = .get) async throws(NetworkError) -> JSON {
        try await response(for: CommonRequest(path: path, parameters: parameters, method: method)).json
    }
}
