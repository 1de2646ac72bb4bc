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

private final class ProfileScreen: Sendable {
    let names = Box<[String]>([])
    init(_ switchboard: Switchboard) {
        switchboard.addObserver(self, for: GetUserInfo.self, calling: ProfileScreen.userInfoChanged)
    }
    func userInfoChanged(_ event: RequestEvent<GetUserInfo>) {
        if case .succeeded(let response) = event { names.mutate { $0.append(response.json["user"]["name"].string ?? "") } }
    }
}

@Suite(.timeLimit(.minutes(1))) struct ReadmeSamplesTests {
    @Test func firstScreenSampleWorks() async throws {
        try await withServer { server in
            let switchboard = makeClient(server)
            let screen = ProfileScreen(switchboard)
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
            config.configuration.urlFilters.append(URLArgumentsFilter(["version": "1.0"]))
            config.configuration.defaultHeaders = ["X-App": "MyApp"]
            config.configuration.requestAdapters.append(ClosureRequestAdapter { urlRequest, _ in
                var adapted = urlRequest
                adapted.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                return adapted
            })
            config.configuration.responseHooks.append(APIErrorCodeHook(codeKey: "errorCode"))
            config.configuration.retryPolicy = .exponential(maximumAttempts: 3)
            let json = try await config.request("/api.php", parameters: ["type": "List"])
            #expect(json["version"] == "1.0")
            let curl = try config.cURLDescription(for: UploadImage())
            #expect(curl.contains("Authorization: <redacted>"))
        }
    }
}
