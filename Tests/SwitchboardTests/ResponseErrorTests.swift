import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// Every bad answer becomes a typed error that keeps what the caller needs.
@Suite(hangGuard, admission) struct ResponseErrorTests {
    struct UserEnvelope: Decodable, Equatable {
        struct User: Decodable, Equatable { let id: String; let name: String; let level: Int }
        let user: User
    }

    @Test func successCarriesJSONDataDictionaryAndTiming() async throws {
        try await withServer { server in
            let response = try await makeClient(server).response(for: Get("/users/7"))
            #expect(response.statusCode == 200)
            #expect(response.json["user"]["name"] == "User 7")
            #expect((response.dictionary?["user"] as? [String: Any])?["nickname"] as? String == "nick7")
            #expect(response.source == .network)
            #expect(response.timing.duration > 0)
            #expect(try response.decode(UserEnvelope.self).user == .init(id: "7", name: "User 7", level: 3))
            #expect(try response.decode(UserEnvelope.User.self, at: "user").level == 3)
        }
    }

    @Test func decodingMismatchIsATypedErrorWithTheType() async throws {
        struct Wrong: Decodable { let missing: Int }
        try await withServer { server in
            let response = try await makeClient(server).response(for: Get("/users/7"))
            #expect(throws: NetworkError.self) { try response.decode(Wrong.self) }
            #expect(throws: NetworkError.self) { try response.decode(Wrong.self, at: "nope") }
        }
    }

    @Test func serverErrorCarriesStatusAndBody() async throws {
        try await withServer { server in
            let error = await makeClient(server).result(Get("/status/500")).failure
            guard case .httpStatus(let response) = error else {
                Issue.record("expected httpStatus, got \(String(describing: error))")
                return
            }
            #expect(response.statusCode == 500)
            #expect(response.json?["message"] == "status 500")
            #expect(error?.statusCode == 500)
        }
    }

    @Test(arguments: [400, 404, 409, 429, 503])
    func clientAndServerStatusesAreHTTPStatusErrors(code: Int) async throws {
        try await withServer { server in
            let error = await makeClient(server).result(Get("/status/\(code)")).failure
            #expect(error?.statusCode == code)
            #expect(error?.errorResponse?.body.isEmpty == false)
        }
    }

    @Test func perRequestStatusCodesOverrideTheConfiguration() async throws {
        try await withServer { server in
            let response = try await makeClient(server).response(for: Get("/status/404").with(\.validation, .default.acceptingStatusCodes([200, 404])))
            #expect(response.statusCode == 404)
            #expect(response.json["status"] == 404)
        }
    }

    @Test func malformedJSONIsADecodingErrorWithASnippet() async throws {
        try await withServer { server in
            let error = await makeClient(server).result(Get("/malformed-json")).failure
            guard case .decoding(_, let snippet) = error else {
                Issue.record("expected decoding, got \(String(describing: error))")
                return
            }
            #expect(snippet.hasPrefix("{\"user\""))
        }
    }

    @Test func wrongContentTypeIsRejectedForJSONRequests() async throws {
        try await withServer { server in
            let error = await makeClient(server).result(Get("/wrong-content-type")).failure
            guard case .unacceptableContentType(let received, let acceptable, let response) = error else {
                Issue.record("expected unacceptableContentType, got \(String(describing: error))")
                return
            }
            #expect(received == "text/plain")
            #expect(acceptable.contains("application/json"))
            #expect(response.text == "hello, not json")
        }
    }

    @Test func acceptableContentTypesCanBeWidenedPerRequestOrGlobally() async throws {
        try await withServer { server in
            // text/html is what seed 001's shared client adds to its acceptable types.
            let global = makeClient(server) { $0.acceptableContentTypes.insert("text/html") }
            let error = await global.result(Get("/html")).failure
            guard case .decoding = error else {
                Issue.record("html is now acceptable, so the failure must be decoding, got \(String(describing: error))")
                return
            }
            let any = try await makeClient(server).response(for: Get("/wrong-content-type").with(\.responseFormat, .data).with(\.validation, .default.acceptingAnyContentType()))
            #expect(String(decoding: any.data, as: UTF8.self) == "hello, not json")
            // An empty set reads as "none", and means it.
            let none = await makeClient(server).result(Get("/echo").with(\.validation, .default.acceptingContentTypes([]))).failure
            guard case .unacceptableContentType = none else {
                Issue.record("expected unacceptableContentType for an empty set, got \(String(describing: none))")
                return
            }
        }
    }

    @Test func dataRequestsSkipContentTypeAndDecoding() async throws {
        try await withServer { server in
            let response = try await makeClient(server).response(for: Get("/images/1.jpg").with(\.responseFormat, .data))
            #expect(response.data.prefix(3) == Data([0xFF, 0xD8, 0xFF]))
            #expect(response.json.isNull)
        }
    }

    @Test func emptyBodiesSucceedWithNull() async throws {
        try await withServer { server in
            let client = makeClient(server)
            let noContent = try await client.response(for: Get("/empty"))
            #expect(noContent.statusCode == 204)
            #expect(noContent.json.isNull)
            let emptyJSON = try await client.response(for: Get("/empty-json"))
            #expect(emptyJSON.json.isNull)
            #expect(emptyJSON.dictionary == nil)  // never an empty dictionary standing in for nothing
        }
    }

    @Test func headRequestsHaveNoBody() async throws {
        try await withServer { server in
            let response = try await makeClient(server).response(for: Get("/users/1").with(\.method, .head))
            #expect(response.statusCode == 200)
            #expect(response.data.isEmpty)
        }
    }

    @Test func errorDescriptionsAreReadable() {
        let response = ErrorResponse(statusCode: 500, headers: [:], body: Data("{\"message\":\"boom\"}".utf8), url: nil)
        #expect(NetworkError.httpStatus(response).description == "HTTP 500: {\"message\":\"boom\"}")
        #expect(NetworkError.timedOut(after: 2).description == "timed out after 2.0 s")
        #expect(NetworkError.cancelled.isCancelled)
    }

    @Test(arguments: [
        ("application/json", "application/json"),
        ("application/json; charset=utf-8", "application/json"),
        ("Application/JSON; charset=UTF-8", "application/json"),
        ("  TEXT/html ", "text/html"),
    ])
    func mediaTypesAreComparedBareAndLowerCased(header: String, expected: String) throws {
        // FoundationNetworking already lower-cases `mimeType` on Linux; the trimming is ours.
        let url = try #require(URL(string: "http://127.0.0.1/x"))
        let response = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": header]))
        #expect(MediaType.mimeType(of: response) == expected)
        let bare = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:]))
        #expect(MediaType.mimeType(of: bare) == nil)
    }

    @Test func plusJSONContentTypesAreAcceptedWithApplicationJSON() {
        #expect(MediaType.isAcceptable("application/problem+json", in: ["application/json"]))
        #expect(!MediaType.isAcceptable("text/plain", in: ["application/json"]))
        #expect(!MediaType.isAcceptable(nil, in: ["application/json"]))
        // "Any" is explicit (`*/*`); an empty set accepts nothing; `type/*` accepts its subtypes.
        #expect(MediaType.isAcceptable(nil, in: ["*/*"]))
        #expect(MediaType.isAcceptable("text/html", in: Configuration.anyContentType))
        #expect(!MediaType.isAcceptable("application/json", in: []))
        #expect(!MediaType.isAcceptable(nil, in: []))
        #expect(MediaType.isAcceptable("text/csv", in: ["text/*"]))
        #expect(!MediaType.isAcceptable("application/csv", in: ["text/*"]))
    }
}
