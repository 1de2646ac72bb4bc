import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// A hook that signals, then blocks until released.
struct BlockingHook: ResponseHook {
    let started: DispatchSemaphore
    let release: DispatchSemaphore
    func didSucceed(_ response: ResponseContext) throws(NetworkError) {
        started.signal()
        _ = release.wait(timeout: .now() + 60)
    }
}

/// A raw body that keeps the base URL, filters and default headers; cookies as a documented setting;
/// user work off the transport's queue.
@Suite(hangGuard, admission) struct RequestBodyAndCookieTests {
    struct PutAvatar: Request {
        var body: RequestBody?
        var parameterEncoding: ParameterEncoding? = nil
        var method: HTTPMethod { .put }
        var path: String { "/echo/avatar" }
        var parameters: JSON? { ["size": "large"] }
        var headers: HTTPHeaders { ["X-Request": "yes"] }
    }

    @Test(arguments: TransportUnderTest.network) func aRawBodyKeepsTheBaseURLFiltersDefaultHeadersAndAdapters(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) {
                $0.urlFilters = [URLArgumentsFilter(["version": "9"])]
                $0.defaultHeaders = ["X-App": "demo"]
                $0.adapters = [ClosureRequestAdapter { request, _ in request.headers["X-Adapted"] = "1" }]
            }
            let bytes = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            let echoed = try await client.response(for: PutAvatar(body: .data(bytes, contentType: "image/png")))
            #expect(echoed.json["method"] == "PUT")
            #expect(echoed.json["headers"]["Content-Type"] == "image/png")
            #expect(echoed.json["headers"]["X-App"] == "demo" && echoed.json["headers"]["X-Request"] == "yes" && echoed.json["headers"]["X-Adapted"] == "1")
            #expect(echoed.json["args"]["version"] == "9" && echoed.json["args"]["size"] == "large", "parameters go in the query: \(echoed.json["args"])")
            #expect(echoed.json["bodyBase64"].string == bytes.base64EncodedString())

            let json = try await client.response(for: PutAvatar(body: .json(["name": "ada"])))
            #expect(json.json["json"]["name"] == "ada")
            let text = try await client.response(for: PutAvatar(body: .text("hello")))
            #expect(text.json["headers"]["Content-Type"] == "text/plain; charset=utf-8")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aBodyAndParametersForTheBodyIsAClearError(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let error = await makeClient(server, on: kind).result(PutAvatar(body: .text("x"), parameterEncoding: .json)).failure
            #expect(error?.invalidReason?.contains("body") == true, "\(String(describing: error))")
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: [CookiePolicy.inMemory, .none, .shared])
    func cookiesFollowThePolicy(policy: CookiePolicy) async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.cookies = policy }
            _ = try await client.response(for: Get("/set-cookie"))
            let echoed = try await client.response(for: Echo())
            let cookie = echoed.json["headers"]["Cookie"].string
            switch policy {
            case .none: #expect(cookie == nil)
            case .inMemory: #expect(cookie == "session=abc")
            case .shared:
                #expect(cookie == "session=abc")
                #expect(HTTPCookieStorage.shared.cookies(for: server.baseURL)?.contains { $0.name == "session" } == true)
                for stored in HTTPCookieStorage.shared.cookies(for: server.baseURL) ?? [] { HTTPCookieStorage.shared.deleteCookie(stored) }
            }
            // Another dispatcher has its own in-memory jar.
            if policy == .inMemory {
                let other = try await makeClient(server).response(for: Echo())
                #expect(other.json["headers"]["Cookie"].isNull)
            }
        }
    }

    /// A response hook that blocks (user code doing slow work) must not hold up other sends: hooks and
    /// the decoding of large bodies run off the transport's queue.
    @Test(arguments: TransportUnderTest.network) func slowWorkOnOneResponseDelaysNoOtherSendOrDeadline(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/never") { _ in ServerResponse(status: 200, body: .never) }
            let hookStarted = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let blocking = BlockingHook(started: hookStarted, release: release)
            let client = makeClient(server, on: kind)
            let order = Box<[String]>([])
            client.send(Get("/small").with(\.pipeline.responseHooks, [blocking])) { _ in order.mutate { $0.append("slow") } }
            await withCheckedContinuation { continuation in
                onOwnThread {
                    hookStarted.wait(); continuation.resume()
                }
            }
            // While the hook blocks: another send completes, and another's deadline fires.
            let other = await client.result(Get("/small"))
            order.mutate { $0.append("other") }
            let deadline = await client.result(Get("/never").with(\.timeout, 0.3)).failure
            order.mutate { $0.append("deadline") }
            release.signal()
            #expect(await eventually { order.value.count == 3 })
            #expect(order.value == ["other", "deadline", "slow"])
            #expect((try? other.get().statusCode) == 200)
            guard case .timedOut = deadline else {
                Issue.record("expected timedOut, got \(String(describing: deadline))")
                return
            }
        }
    }
}

/// Where a large body is decoded: not on the transport's serial queue, which every other transfer's
/// callbacks share.
@Suite(hangGuard, admission) struct DecodingQueueTests {
    @Test func aLargeBodyIsDecodedOffTheTransportQueueAndASmallOneStaysInline() async throws {
        try await withServer { server in
            let transport = URLSessionTransport()
            let key = DispatchSpecificKey<String>()
            transport.queue.setSpecific(key: key, value: "switchboard.transport")
            let client = Dispatcher(
                configuration: Configuration {
                    $0.baseURL = server.baseURL; $0.callbackQueue = .immediate
                }, transport: transport)
            let labels = Box<[String: String]>([:])
            client.addObserver(labels, for: Get.self, on: .immediate) { box, event in
                guard event.isTerminal else { return }
                let label = DispatchQueue.getSpecific(key: key) ?? "elsewhere"
                box.mutate { $0[event.request.path] = label }
            }
            let large = try await client.response(for: Get("/json/1024"))
            #expect(large.data.count > 1 << 20)
            _ = try await client.response(for: Get("/small"))
            #expect(labels.value["/json/1024"] != "switchboard.transport", "\(labels.value)")
            #expect(labels.value["/small"] == "switchboard.transport", "\(labels.value)")
        }
    }
}
