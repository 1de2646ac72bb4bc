import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

// The README's code samples, compiled here so they can't drift from the API, and run against the
// loopback server where they touch the network.

private struct GetUserInfo: Request {
    let id: String
    var path: String { "/users/\(id)" }
}

private struct UploadImage: Request {
    var method: HTTPMethod { .post }
    var path: String { "/iphone/image/upload" }
    var validation: Validation { .default.requiring(["imageId": .string]) }
}

@MainActor private final class ProfileScreen {
    let names = Box<[String]>([])
    init(_ switchboard: Dispatcher) {
        switchboard.addObserver(self, for: GetUserInfo.self, calling: ProfileScreen.userInfoChanged)
    }
    func userInfoChanged(_ event: RequestEvent<GetUserInfo>) {
        if case .succeeded(let response) = event.kind { names.mutate { $0.append(response.json["user"]["name"].string ?? "") } }
    }
}

@Suite(timeLimit(minutes: 1)) struct ReadmeSamplesTests {
    @Test func firstScreenSampleWorks() async throws {
        try await withServer { server in
            let switchboard = makeClient(server)
            let screen = await ProfileScreen(switchboard)
            switchboard.send(GetUserInfo(id: "123"))
            let response = try await switchboard.response(for: GetUserInfo(id: "123"))
            #expect(response.json["user"]["name"] == "User 123")
            #expect(await eventually { screen.names.value == ["User 123", "User 123"] })
        }
    }

    @Test func customisationSampleCompilesAndRuns() async throws {
        try await withServer { server in
            let token = "t0k3n"
            let config = makeClient(server)
            config.updateConfiguration {
                $0.urlFilters.append(URLArgumentsFilter(["version": "1.0"]))                 // ?version=… on every URL
                $0.defaultHeaders = ["X-App": "MyApp"]                                       // request headers win
                $0.adapters.append(ClosureRequestAdapter { request, _ in              // e.g. a bearer token
                    request.headers["Authorization"] = "Bearer \(token)"
                })
                $0.responseHooks.append(APIErrorCodeHook(codeKey: "errorCode"))             // 200 + {"errorCode": 3} → .api error
                $0.retryPolicy = .exponential(maximumAttempts: 3)                            // idempotent methods; honours Retry-After
            }
            let json = try await config.request("/api.php", parameters: ["type": "List"])
            #expect(json["version"] == "1.0")
            let curl = try config.cURLDescription(for: UploadImage())
            #expect(curl.contains("Authorization: <redacted>"))
        }
    }
}
