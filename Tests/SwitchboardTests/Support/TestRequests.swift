import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard

/// `GET /echo/<path>` with anything a test wants to vary.
struct Echo: Request {
    var method: HTTPMethod = .get
    var path: String = "/echo"
    var parameters: JSON? = nil
    var parameterEncoding: ParameterEncoding? = nil
    var headers: HTTPHeaders = [:]
    var credentials: Credentials? = nil
    var timeout: TimeInterval? = nil
    var baseURL: URL? = nil
    var reportsProgress: Bool = false
}

/// Any path, answered however the server answers it.
struct Get: Request {
    var path: String
    var method: HTTPMethod = .get
    var responseFormat: ResponseFormat = .json
    var validation: Validation = .default
    var pipeline = RequestPipeline()
    var useCDN = false
    var credentials: Credentials? = nil
    var timeout: TimeInterval? = nil
    var reportsProgress: Bool = false
    var headers: HTTPHeaders = [:]
    var parameters: JSON? = nil
    var cachePolicy: CachePolicy? = nil

    init(_ path: String) { self.path = path }
}

/// A request type of its own, so registry tests don't see other tests' events.
struct Ping: Request {
    var n = 0
    /// `/echo` answers at once; a test that must cancel before the answer uses a slow route.
    var path = "/echo"
}

/// Another distinct type.
struct Pong: Request {
    var path: String { "/echo" }
}

/// A request that builds its own URLRequest.
struct Custom: Request {
    let urlRequest: URLRequest?
    var path: String { "/ignored" }
    var parameters: JSON? { ["ignored": true] }
    func makeURLRequest(baseURL: URL?) throws -> URLRequest? { urlRequest }
}
