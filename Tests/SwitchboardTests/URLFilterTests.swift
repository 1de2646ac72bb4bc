import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

@Suite(hangGuard, admission) struct URLFilterTests {
    @Test func argumentsFilterAppendsTheVersionToEveryRequest() async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.urlFilters = [URLArgumentsFilter(["version": "2.1.0"])] }
            let plain = try await client.response(for: Echo())
            #expect(plain.json["query"] == "version=2.1.0")
            let withQuery = try await client.response(for: Echo(parameters: ["type": "List"]))
            #expect(withQuery.json["query"] == "type=List&version=2.1.0")
        }
    }

    @Test func argumentsFilterDoesNotDuplicateAKeyAlreadyThere() async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.urlFilters = [URLArgumentsFilter(["version": "2.1.0", "lang": "en"])] }
            let response = try await client.response(for: Echo(parameters: ["version": "9"]))
            #expect(response.json["query"] == "version=9&lang=en")
        }
    }

    @Test func filtersRunInOrderGlobalThenRequestEachSeeingThePreviousOutput() async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            let global = ClosureURLFilter { url, _ in
                seen.mutate { $0.append("global saw " + url.path) }
                return url.appendingPathComponent("g")
            }
            let local = ClosureURLFilter { url, request in
                seen.mutate { $0.append("request saw \(url.path) for \(type(of: request))") }
                return url.appendingPathComponent("r")
            }
            let client = makeClient(server) { $0.urlFilters = [global] }
            var request = Get("/echo")
            request.pipeline.urlFilters = [local]
            let response = try await client.response(for: request)
            #expect(response.json["path"] == "/echo/g/r")
            #expect(seen.value == ["global saw /echo", "request saw /echo/g for Get"])
        }
    }

    @Test func filtersAreSkippedForAbsolutePathsAndCustomRequests() async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.urlFilters = [URLArgumentsFilter(["version": "1"])] }
            let absolute = try await client.response(for: Get(server.url("/echo/abs").absoluteString))
            #expect(absolute.json["query"] == "")
            let custom = try await client.response(for: Custom(urlRequest: URLRequest(url: server.url("/echo/custom"))))
            #expect(custom.json["query"] == "")
        }
    }

    @Test func aThrowingFilterFailsTheRequestBeforeSending() async throws {
        struct Refused: Error {}
        try await withServer { server in
            let client = makeClient(server) { $0.urlFilters = [ClosureURLFilter { _, _ in throw Refused() }] }
            let error = await client.result(Echo()).failure
            expectError(error, \.isInvalidRequest, "invalidRequest")
            #expect(server.totalRequests == 0)
        }
    }

    @Test func aFilterThatProducesANonHTTPURLIsRejected() async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.urlFilters = [ClosureURLFilter { _, _ in URL(string: "file:///etc/passwd")! }] }
            expectError(await client.result(Echo()).failure, \.isInvalidRequest, "invalidRequest")
        }
    }

    @Test func cdnRequestsUseTheCDNURL() async throws {
        try await withServer { server in
            let cdn = try LoopbackServer.standard()
            defer { cdn.stopInBackground() }
            let client = makeClient(server) { $0.cdnURL = cdn.baseURL }
            var request = Get("/images/1.jpg").with(\.responseFormat, .data)
            request.useCDN = true
            _ = try await client.response(for: request)
            #expect(cdn.hits("/images/1.jpg") == 1)
            #expect(server.hits("/images/1.jpg") == 0)
        }
    }

    @Test func cdnRequestWithoutACDNURLIsInvalid() async throws {
        try await withServer { server in
            var request = Get("/images/1.jpg")
            request.useCDN = true
            let error = await makeClient(server).result(request).failure
            #expect(error?.invalidReason?.contains("cdnURL") == true)
        }
    }
}
