import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

@Suite(hangGuard, admission) struct HeaderAndAdapterTests {
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

    /// An adapter is the synchronous form of an interceptor: among the interceptors it runs in its
    /// place (after the one before it), and its error fails the send as an adapter's does.
    @Test(arguments: TransportUnderTest.network) func anAdapterAmongTheInterceptorsRunsInItsPlace(_ kind: TransportUnderTest) async throws {
        struct Stamp: RequestInterceptor {
            let value: String
            func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest {
                var stamped = request
                stamped.headers["X-Order"] = (stamped.headers["X-Order"].map { $0 + "," } ?? "") + value
                return stamped
            }
        }
        struct Refuses: Error {}
        try await withServer { server in
            let appends = ClosureRequestAdapter { request, _ in request.headers["X-Order"] = (request.headers["X-Order"] ?? "") + ",adapter" }
            let client = makeClient(server, on: kind) { $0.interceptors = [Stamp(value: "first"), appends, Stamp(value: "last")] }
            let response = try await client.response(for: Echo())
            #expect(response.json["headers"]["X-Order"] == "first,adapter,last")
            let failing = makeClient(server, on: kind) { $0.interceptors = [ClosureRequestAdapter { _, _ in throw Refuses() }] }
            let error = await failing.result(Echo()).failure
            guard case .invalidRequest(let reason)? = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("request adapter ClosureRequestAdapter threw"), "\(reason)")
            #expect(server.hits("/echo") == 1, "the failing adapter's send reached the server")
        }
    }

    /// Counts its synchronous adapts, and its asynchronous ones when it has its own.
    final class Counting: RequestAdapter {
        let adapts = Box(0)
        func adapt(_ request: inout OutgoingRequest, for original: any Request) throws {
            adapts.mutate { $0 += 1 }
            request.headers["X-Adapts"] = "\(adapts.value)"
        }
        func retry(_ context: RetryContext) async -> RetryDecision { .doNotRetry }
    }

    final class CountingWithItsOwnAsyncAdapt: RequestAdapter {
        let adapts = Box(0)
        let asyncAdapts = Box(0)
        func adapt(_ request: inout OutgoingRequest, for original: any Request) throws { adapts.mutate { $0 += 1 } }
        func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest {
            asyncAdapts.mutate { $0 += 1 }
            return request
        }
    }

    /// An adapter that also decides retries, listed among the adapters and the interceptors (how one
    /// was used before adapters were interceptors), adapts once per attempt; one with its own `async`
    /// `adapt` runs both, as before.
    @Test(arguments: TransportUnderTest.network) func anAdapterInBothListsAdaptsOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let both = Counting()
            let client = makeClient(server, on: kind) {
                $0.adapters = [both]
                $0.interceptors = [both]
            }
            let response = try await client.response(for: Echo())
            #expect(both.adapts.value == 1)
            #expect(response.json["headers"]["X-Adapts"] == "1")
            let own = CountingWithItsOwnAsyncAdapt()
            let second = makeClient(server, on: kind) {
                $0.adapters = [own]
                $0.interceptors = [own]
            }
            _ = try await second.response(for: Echo())
            #expect(own.adapts.value == 1 && own.asyncAdapts.value == 1)
        }
    }

    /// "The same adapter" is the same object: two closure adapters, one in each list, both adapt; one
    /// object in both adapts once.
    @Test(arguments: TransportUnderTest.network) func twoClosureAdaptersInTheTwoListsBothAdapt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let calls = Box<[String]>([])
            let first = ClosureRequestAdapter { request, _ in
                calls.mutate { $0.append("first") }
                request.headers["X-First"] = "1"
            }
            let second = ClosureRequestAdapter { request, _ in
                calls.mutate { $0.append("second") }
                request.headers["X-Second"] = "2"
            }
            let client = makeClient(server, on: kind) {
                $0.adapters = [first]
                $0.interceptors = [second, first]
            }
            let response = try await client.response(for: Echo())
            #expect(calls.value == ["first", "second"])
            #expect(response.json["headers"]["X-First"] == "1" && response.json["headers"]["X-Second"] == "2")
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

    /// The transport adds the package's User-Agent as the request goes out: every hop of a redirect
    /// carries it, once, and the request the adapters see has none (the app's code sees the fields it
    /// or the configuration set, nothing more).
    @Test(arguments: TransportUnderTest.network) func theUserAgentGoesOnEveryHopAndIsAddedByTheTransport(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String?]>([])
            let recorder = ClosureRequestAdapter { request, _ in seen.mutate { $0.append(request.headers["User-Agent"]) } }
            let client = makeClient(server, on: kind) { $0.adapters = [recorder] }
            let redirected = try await client.response(for: Echo(path: "/redirect-chain/2"))
            #expect(redirected.httpResponse.url?.path == "/echo")
            #expect(Self.values("User-Agent", in: redirected) == [UserAgent.default])
            #expect(server.totalRequests == 4)
            #expect(seen.value == [nil])
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
                request.httpBody = try BodyCompression.gzipped(Data(#"[{"e":"open"},{"e":"tap"},{"e":"close"}]"#.utf8))
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
