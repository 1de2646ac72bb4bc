import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

@Suite(timeLimit(minutes: 1)) struct HeaderAndAdapterTests {
    @Test(arguments: TransportUnderTest.network) func defaultHeadersMergeWithTheRequestsAndTheRequestWins(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.defaultHeaders = ["X-App": "demo", "X-Mode": "default"] }
            let response = try await client.response(for: Echo(headers: ["x-mode": "request"]))
            #expect(response.json["headers"]["X-App"] == "demo")
            // One field, the request's value (the name keeps the first spelling; names are case-insensitive).
            #expect(response.json["headers"]["X-Mode"] == "request")
            #expect(response.json["headers"]["x-mode"].isNull)
        }
    }

    @Test(arguments: TransportUnderTest.network) func bodyEncodingsContentTypeWinsOverADefaultButNotOverTheRequest(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.defaultHeaders = ["Content-Type": "application/json;charset=utf-8"] }
            let form = try await client.response(for: Echo(method: .post, parameters: ["a": "1"]))
            #expect(form.json["form"]["a"] == "1")
            let own = try await client.response(for: Echo(method: .post, parameters: ["a": "1"], headers: ["Content-Type": "text/plain"]))
            #expect(own.json["headers"]["Content-Type"] == "text/plain")
        }
    }

    @Test(arguments: TransportUnderTest.network) func defaultHeaderWithANewlineIsRejected(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.defaultHeaders = ["X-App": "a\r\nInjected: yes"] }
            expectError(await client.result(Echo()).failure, \.isInvalidRequest, "invalidRequest")
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func adaptersAddABearerTokenToBuiltAndCustomRequests(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let bearer = ClosureRequestAdapter { request, _ in
                request.headers["Authorization"] = "Bearer t0k3n"
            }
            let client = makeClient(server, on: kind) { $0.adapters = [bearer] }
            let built = try await client.response(for: Echo())
            #expect(built.json["headers"]["Authorization"] == "Bearer t0k3n")
            let custom = try await client.response(for: Custom(urlRequest: URLRequest(url: server.url("/echo/c"))))
            #expect(custom.json["headers"]["Authorization"] == "Bearer t0k3n")
        }
    }

    /// Every value the echo route saw for `name`, whatever the case it was sent in.
    static func values(_ name: String, in response: Response<Echo>) -> [String] {
        (response.json["headers"].object ?? [:]).filter { $0.key.lowercased() == name.lowercased() }.compactMap(\.value.string)
    }

    /// The package's User-Agent goes out unless the app sets one, in the default headers or in an
    /// adapter (in any case of the name): one value, never two.
    @Test(arguments: TransportUnderTest.network) func theUserAgentIsThePackagesUnlessTheAppSetsOne(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let plain = try await makeClient(server, on: kind).response(for: Echo())
            #expect(Self.values("User-Agent", in: plain) == [UserAgent.default])
            let byDefaults = try await makeClient(server, on: kind) { $0.defaultHeaders = ["User-Agent": "App/3"] }.response(for: Echo())
            #expect(Self.values("User-Agent", in: byDefaults) == ["App/3"])
            let agent = ClosureRequestAdapter { request, _ in request.headers["user-agent"] = "Adapted/1" }
            let byAdapter = try await makeClient(server, on: kind) { $0.adapters = [agent] }.response(for: Echo())
            #expect(Self.values("User-Agent", in: byAdapter) == ["Adapted/1"])
        }
    }

    /// The User-Agent of the app's own `URLSessionConfiguration` wins over the package's (URLSession's
    /// transport alone takes one).
    @Test func theUserAgentOfTheAppsSessionConfigurationWins() async throws {
        try await withServer { server in
            let settings = URLSessionConfiguration.ephemeral
            settings.httpAdditionalHeaders = ["user-agent": "Session/2"]
            let response = try await makeClient(server) { $0.transport = .urlSession(settings) }.response(for: Echo())
            #expect(Self.values("User-Agent", in: response) == ["Session/2"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func requestAdaptersRunAfterTheConfigurations(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let order = Box<[String]>([])
            let global = ClosureRequestAdapter { _, _ in order.mutate { $0.append("global") } }
            let local = ClosureRequestAdapter { _, _ in order.mutate { $0.append("request") } }
            var request = Get("/echo")
            request.pipeline.adapters = [local]
            _ = try await makeClient(server, on: kind) { $0.adapters = [global] }.response(for: request)
            #expect(order.value == ["global", "request"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func anAdapterCannotInjectAHeaderAndAThrowingAdapterFailsBeforeSending(_ kind: TransportUnderTest) async throws {
        struct NoToken: Error {}
        try await withServer { server in
            let injecting = ClosureRequestAdapter { request, _ in
                request.headers["X-Token"] = "x\nInjected: 1"
            }
            // Adapters set headers on Switchboard's own HTTPHeaders, so the value is seen and refused
            // (URLRequest.setValue on Linux would drop it silently and send the request without it).
            let error = await makeClient(server, on: kind) { $0.adapters = [injecting] }.result(Echo()).failure
            #expect(error?.isInvalidRequest == true, "\(String(describing: error))")
            #expect(server.totalRequests == 0)
            let sentSoFar = server.totalRequests
            let throwing = ClosureRequestAdapter { _, _ in throw NoToken() }
            let thrown = await makeClient(server, on: kind) { $0.adapters = [throwing] }.result(Echo()).failure
            #expect(thrown?.invalidReason?.contains("NoToken") == true)
            #expect(server.totalRequests == sentSoFar)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aMakeURLRequestThatThrowsFailsOnceBeforeSendingAndNamesTheError(_ kind: TransportUnderTest) async throws {
        struct Unsigned: Error {}
        struct Signed: Request {
            var path: String { "/ignored" }
            func makeURLRequest(baseURL: URL?) throws -> URLRequest? { throw Unsigned() }
        }
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let heard = Box<[String]>([])
            let listener = Listener()
            client.addObserver(listener, for: Signed.self, on: .immediate) { _, event in heard.mutate { $0.append(Listener.name(event)) } }
            let error = await client.result(Signed()).failure
            #expect(error?.isInvalidRequest == true)
            #expect(error?.invalidReason == "makeURLRequest threw: Unsigned()")
            #expect(heard.value == ["started", "failed"])
            #expect(await settled(client))
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func seedCustomRequestSendsItsOwnGzippedBodyAndStillReachesObservers(_ kind: TransportUnderTest) async throws {
        struct UploadEvents: Request {
            let url: URL
            var path: String { "/ignored" }
            var priority: RequestPriority { .high }
            var validation: Validation { .default.requiring(["received": .integer]) }
            func makeURLRequest(baseURL: URL?) throws -> URLRequest? {
                var request = URLRequest(url: url)
                request.httpMethod = "POST"
                request.addValue("application/json; charset=UTF-8", forHTTPHeaderField: "Content-Type")
                request.addValue("gzip", forHTTPHeaderField: "Content-Encoding")
                request.httpBody = Gzip.stored(Data(#"[{"e":"open"},{"e":"tap"},{"e":"close"}]"#.utf8))
                return request
            }
        }
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let heard = Box<[String]>([])
            let listener = Listener()
            client.addObserver(listener, for: UploadEvents.self, on: .immediate) { _, event in heard.mutate { $0.append(Listener.name(event)) } }
            let response = try await client.response(for: UploadEvents(url: server.url("/events")))
            #expect(response.json["received"] == 3)
            #expect(response.json["encoding"] == "gzip")
            #expect(heard.value == ["started", "succeeded"])
        }
    }
}
