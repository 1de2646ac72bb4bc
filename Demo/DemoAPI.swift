import Foundation
import LoopbackServer
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `GET /users/:id` — the user info endpoint of the seeds.
struct GetUserInfo: Request {
    let id: String
    var path: String { "/users/\(id)" }
}

/// `POST /register` with form parameters.
struct Register: Request {
    let username: String
    let password: String
    var method: HTTPMethod { .post }
    var path: String { "/register" }
    var parameters: JSON? { ["username": .string(username), "password": .string(password)] }
}

/// `GET /images/:id` — raw JPEG bytes, not JSON.
struct GetImage: Request {
    let imageID: String
    var path: String { "/images/\(imageID)" }
    var responseFormat: ResponseFormat { .data }
}

/// An endpoint that answers 500 with a JSON body.
/// The signed-in user: needs a valid bearer token.
struct GetMe: Request {
    var path: String { "/me" }
}

/// Exchanges the refresh credential for a new access token (needs no access token itself).
struct RefreshToken: Request {
    var method: HTTPMethod { .post }
    var path: String { "/auth/refresh" }
}

/// A request whose method is whatever it is given (the demo gives it one with a line break).
struct OddMethod: Request {
    var method: HTTPMethod
    var path: String { "/echo" }
}

/// A path with another scheme than http(s).
struct LocalFile: Request {
    var path: String { "file:///etc/passwd" }
}

struct BrokenEndpoint: Request {
    var path: String { "/status/500" }
}

/// Seed 000's `buildCustomUrlRequest`: a POST of gzipped events whose body, Content-Type and
/// Content-Encoding the request builds itself. Validation, callbacks and observers still apply.
struct UploadEvents: Request {
    let events: [String]
    var path: String { "/events" }
    var validation: Validation { .default.requiring(["received": .integer]) }
    func makeURLRequest(baseURL: URL?) throws -> URLRequest? {
        guard let url = baseURL?.appendingPathComponent("events") else { return nil }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.addValue("application/json; charset=UTF-8", forHTTPHeaderField: "Content-Type")
        request.addValue("gzip", forHTTPHeaderField: "Content-Encoding")
        let json = JSON.array(events.map { ["event": .string($0)] })
        request.httpBody = try BodyCompression.gzipped(json.serialized())  // really compressed, by zlib
        return request
    }
}

/// `GET /echo` with custom header fields (seed 000's `requestHeaderFieldValueDictionary`).
struct EchoHeaders: Request {
    var path: String { "/echo" }
    var headers: HTTPHeaders { ["X-Client": "switchboard-demo", "X-Device": "linux"] }
}

/// The user endpoint with a validator the answer doesn't satisfy (the id is a string).
struct StrictUserInfo: Request {
    let id: String
    var path: String { "/users/\(id)" }
    var validation: Validation { .default.requiring(["user": ["id": .integer, "name": .string]]) }
}

/// An API that reports a failure inside a 200 body: `{"errorCode": 3, "message": "session expired"}`.
struct SessionCheck: Request {
    var path: String { "/body-error" }
}

/// An endpoint that fails twice with 503, then answers.
struct FlakyFeed: Request {
    let key: String
    var path: String { "/flaky/\(key)?failures=2" }
    var pipeline: RequestPipeline {
        RequestPipeline { $0.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: 0.05, maximumDelay: 0.2) }
    }
}

/// YTKNetwork's `UploadImageApi`: one JPEG in a multipart body (`constructingBodyBlock`), and a reply
/// that must carry an `imageId` string (`jsonValidator`).
struct UploadImage: Request {
    let jpeg: Data
    var method: HTTPMethod { .post }
    var path: String { "/iphone/image/upload" }
    var body: RequestBody? {
        .multipart { form in
            form.append(jpeg, name: "image", fileName: "image.jpg", mimeType: "image/jpeg")
        }
    }
    var validation: Validation { .default.requiring(["imageId": .string]) }
    var reportsProgress: Bool { true }
}

/// Small stand-ins for photos: the leading bytes of each format, then filler.
enum SampleImages {
    static let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]) + Data("JFIF".utf8) + Data(repeating: 0x42, count: 40_000)
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 0x17, count: 25_000)
    static let gif = Data("GIF89a".utf8) + Data(repeating: 0x01, count: 9_000)
}

/// A user as the app models it: what `GET /users/:id` answers, typed.
struct User: Decodable, Sendable {
    let id: String
    let name: String
    let level: Int
}

/// `GET /users/:id`'s answer (`{"user": {…}, "version": …}`).
struct UserEnvelope: Decodable, Sendable {
    let user: User
}

/// `GET /users/:id` with a response type: `response.value` is a `UserEnvelope`, decoded once.
struct GetUser: Request {
    typealias Value = UserEnvelope
    let id: String
    var path: String { "/users/\(id)" }
}

/// A new account as the app writes it.
struct NewAccount: Encodable, Sendable {
    let username: String
    let password: String
}

/// What `POST /register` answers.
struct Registered: Decodable, Sendable {
    let userId: String
    let username: String
}

/// `POST /register` with an `Encodable` body (JSON), answered with a `Registered`.
struct RegisterAccount: Request {
    typealias Value = Registered
    let account: NewAccount
    var method: HTTPMethod { .post }
    var path: String { "/register" }
    var body: RequestBody? { .encodable(account) }
}
