import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// Seed 001's one-call common request.
@Suite(hangGuard, admission) struct CommonRequestTests {
    /// Exactly seed 001's parameters (its key spelling included).
    static let seedParameters: JSON = ["type": "List", "City": "2", "lid": "31", "SortBy": "1", "Start": "0", "End": "3"]

    @Test(arguments: TransportUnderTest.network) func getWithTheSeedsParametersReturnsTheJSON(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let json = try await client.request("/api.php", parameters: Self.seedParameters, method: .get)
            #expect(json["errorCode"] == 0)
            #expect(json["list"].array?.count == 3)
            #expect(json["city"] == "2")
            #expect(json["sortBy"] == "1")
        }
    }

    @Test(arguments: TransportUnderTest.network) func postWithTheSeedsParametersAsAFormBody(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let json = try await makeClient(server, on: kind).request("/api.php", parameters: Self.seedParameters, method: .post)
            #expect(json["method"] == "POST")
            #expect(json["list"].array?.count == 3)
        }
    }

    @Test(arguments: TransportUnderTest.network) func postUsesTheConfiguredJSONBodyEncoding(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.bodyEncoding = .json }
            let result = await completion { client.request("/api.php", parameters: ["type": "List", "start": 1, "end": 3], method: .post, completion: $0) }
            let json = try result.get()
            #expect(json["method"] == "POST")
            #expect(json["list"][0]["id"] == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aFailureIsATypedErrorNeverAnEmptyDictionary(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let result = await completion { client.request("/status/500", completion: $0) }
            guard case .failure(let error) = result else {
                Issue.record("a 500 must fail, got \(result)")
                return
            }
            #expect(error.statusCode == 500)
        }
    }

    @Test(arguments: TransportUnderTest.network) func observersOfCommonRequestHearTheCallsAndTellThemApartByPath(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let paths = Box<[String]>([])
            let listener = Listener()
            client.addObserver(listener, for: CommonRequest.self, on: .immediate) { _, event in
                if event.isTerminal { paths.mutate { $0.append(event.request.path) } }
            }
            _ = try await client.request("/users/1")
            _ = try await client.request("/api.php", parameters: ["type": "List"])
            #expect(paths.value == ["/users/1", "/api.php"])
        }
    }
}
