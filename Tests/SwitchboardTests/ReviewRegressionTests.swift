import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// A transport that answers inside `perform`, before it returns: 503 for the first `failures` calls.
final class SynchronousTransport: Transport {
    private let calls = Locked(0)
    let failures: Int
    init(failures: Int) { self.failures = failures }
    var callCount: Int { calls.withLock { $0 } }

    func perform(_ transportRequest: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let request = transportRequest.urlRequest, completion = callbacks.completion
        let call = calls.withLock {
            $0 += 1; return $0
        }
        let status = call <= failures ? 503 : 200
        let http = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"])!
        let body = Data("{\"call\":\(call)}".utf8)
        let timing = Timing(start: Date(), timeToFirstByte: 0, duration: 0)
        completion(
            status == 200
                ? .success(TransportResponse(httpResponse: http, data: body, timing: timing))
                : .failure(.httpStatus(ErrorResponse(http, body: body))))
        return NoopTask()
    }

    struct NoopTask: TransportTask { func cancel() {} }
}

/// A custom request that carries credentials (so they are not sent pre-emptively).
struct CustomWithCredentials: Request {
    let url: URL
    var path: String { "/ignored" }
    var credentials: Credentials? { Credentials(user: "ada", password: "pw") }
    func makeURLRequest(baseURL: URL?) throws -> URLRequest? { URLRequest(url: url) }
}

@Suite(hangGuard, admission) struct ReviewRegressionTests {
    @Test(arguments: TransportUnderTest.network) func noProgressEventFollowsTheTerminalEventWhenCancelledMidTransfer(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            for _ in 0..<3 {
                let client = makeClient(server, on: kind)
                let log = Box<[String]>([])
                let listener = Listener()
                client.addObserver(listener, for: Get.self, on: .immediate) { _, event in log.mutate { $0.append(Listener.name(event)) } }
                let request = Get("/drip?chunks=3000&interval=10&size=100").with(\.responseFormat, .data).with(\.reportsProgress, true)
                let handle = client.send(request)
                #expect(await eventually { log.value.contains("progress") })
                handle.cancel()
                #expect(await eventually { handle.isFinished })
                #expect(await settled(client))
                let names = log.value
                let terminal = ["succeeded", "failed", "cancelled"]
                #expect(names.filter { terminal.contains($0) }.count == 1)
                #expect(names.last.map { terminal.contains($0) } == true)  // nothing after the terminal event
                #expect(names.last == "cancelled")
            }
        }
    }

    @Test func aTransportThatCompletesInsidePerformStillRetriesAndFinishes() async throws {
        let transport = SynchronousTransport(failures: 2)
        let client = Dispatcher(
            configuration: Configuration {
                $0.baseURL = URL(string: "http://127.0.0.1:9")
                $0.callbackQueue = .immediate
                $0.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: 0.01)
            }, transport: transport)
        let response = try await client.response(for: Get("/x"))
        #expect(response.attempts == 3)
        #expect(transport.callCount == 3)
        #expect(client.inFlightCount == 0)
    }

    @Test(arguments: TransportUnderTest.network) func cancellingFromAStartedObserverSendsNothing(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let listener = Listener()
            client.addObserver(listener, for: Get.self, on: .immediate) { _, event in
                if case .started = event.kind { client.cancelAll() }
            }
            let outcome = Box<NetworkError?>(nil)
            client.send(Get("/echo/never-sent")) { result in outcome.mutate { $0 = result.failure } }
            #expect(await eventually { outcome.value != nil })
            #expect(outcome.value?.isCancelled == true)
            #expect(await settled(client))
            #expect(server.hits("/echo/never-sent") == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func anAlreadyCancelledTaskSendsNothing(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let task = Task { () async throws(NetworkError) -> Response<Get> in
                withUnsafeCurrentTask { $0?.cancel() }
                return try await client.response(for: Get("/echo/never"))
            }
            #expect((await task.result.failure as? NetworkError)?.isCancelled == true)
            #expect(await settled(client))
            #expect(server.hits("/echo/never") == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func errorBodiesAreRedactedInTheLog(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route("GET", "/leaky") { _ in .json(["password": "hunter2", "detail": "nope"], status: 503) }
            let logger = CapturingLogger()
            let client = makeClient(server, on: kind) {
                $0.logMode = .errors
                $0.logger = logger
                $0.retryPolicy = RetryPolicy(maximumAttempts: 2, initialDelay: 0.01)
            }
            _ = await client.result(Get("/leaky"))
            #expect(logger.records.value.count == 2)  // the retry line and the failure line
            #expect(!logger.text.contains("hunter2"))
            #expect(logger.text.contains("nope"))
        }
    }

    @Test(arguments: TransportUnderTest.network) func headOfALargeResourceIsNotTooLarge(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.maximumResponseSize = 10_000 }
            let response = try await client.response(for: Get("/bytes/200000").with(\.method, .head).with(\.responseFormat, .data))
            #expect(response.statusCode == 200)
            #expect(response.data.isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network) func credentialsNeverAnswerAChallengeFromARedirectedHost(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let target = "http://localhost:\(server.port)/basic-auth/ada/pw"
            let url = server.url("/redirect/302?to=" + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
            let error = await makeClient(server, on: kind).result(CustomWithCredentials(url: url)).failure
            expectError(error, { if case .unauthorized = $0 { true } else { false } }, "unauthorized")
            // The same request to its own origin is answered.
            let own = try await makeClient(server, on: kind).response(for: CustomWithCredentials(url: server.url("/basic-auth/ada/pw")))
            #expect(own.json["authenticated"] == true)
        }
    }

    @Test(arguments: TransportUnderTest.network) func anAbsolutePathThatIsNotAURLIsInvalid(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let error = await makeClient(server, on: kind).result(Get("http://[::1")).failure
            expectError(error, \.isInvalidRequest, "invalidRequest")
        }
    }

    @Test func concurrentConfigurationUpdatesAreNotLost() async {
        let client = Dispatcher()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<100 { client.updateConfiguration { $0.urlFilters.append(URLArgumentsFilter([:])) } }
                }
            }
        }
        #expect(client.configuration.urlFilters.count == 800)
    }

    @Test func releasingADispatcherEndsItsEventStreams() async {
        var client: Dispatcher? = Dispatcher()
        let stream = client!.events(for: Ping.self)
        let task = Task {
            for await _ in stream {}; return true
        }
        client = nil
        #expect(await task.value)
    }

    @Test func tokensOfTwoDispatchersAreNotEqual() {
        let listener = Listener()
        let a = Dispatcher().addObserver(listener, for: Ping.self, on: .immediate) { $0.heard($1) }
        let b = Dispatcher().addObserver(listener, for: Ping.self, on: .immediate) { $0.heard($1) }
        #expect(a != b)
        // Two registrations on one dispatcher differ too; equal tokens hash alike (a set holds each once).
        let dispatcher = Dispatcher()
        let c = dispatcher.addObserver(listener, for: Ping.self, on: .immediate) { $0.heard($1) }
        let d = dispatcher.addObserver(listener, for: Ping.self, on: .immediate) { $0.heard($1) }
        #expect(c != d)
        #expect(Set([a, b, c, d, a, c]).count == 4)
    }

    @Test(arguments: TransportUnderTest.network) func anAdapterSettingAnInvalidHeaderNameIsRejected(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let bad = ClosureRequestAdapter { request, _ in
                request.headers["Bad Name"] = "v"
            }
            let error = await makeClient(server, on: kind) { $0.adapters = [bad] }.result(Echo()).failure
            expectError(error, \.isInvalidRequest, "invalidRequest")
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRequestsOwnCDNURLWinsOverTheConfigurations(_ kind: TransportUnderTest) async throws {
        struct OwnCDN: Request {
            let cdn: URL
            var path: String { "/images/2.jpg" }
            var useCDN: Bool { true }
            var cdnURL: URL? { cdn }
            var responseFormat: ResponseFormat { .data }
        }
        try await withServer { server in
            let cdn = try LoopbackServer.standard()
            defer { cdn.stopInBackground() }
            let client = makeClient(server, on: kind) { $0.cdnURL = server.baseURL }
            _ = try await client.response(for: OwnCDN(cdn: cdn.baseURL))
            #expect(cdn.hits("/images/2.jpg") == 1)
            #expect(server.hits("/images/2.jpg") == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aTimeoutIsRetriedEndToEnd(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.retryPolicy = RetryPolicy(maximumAttempts: 2, initialDelay: 0.01) }
            let error = await client.result(Get("/delay/60000").with(\.timeout, 0.2)).failure
            expectError(error, { if case .timedOut = $0 { true } else { false } }, "timedOut")
            #expect(await eventually { server.hits("/delay/60000") == 2 })
        }
    }

    @Test func nullableRequiresTheKeyButAcceptsNull() {
        let json: JSON = ["nick": nil, "name": "Ada"]
        #expect(JSONShape.object(["nick": .nullable(.string)]).mismatch(in: json) == nil)
        #expect(JSONShape.object(["gone": .nullable(.string)]).mismatch(in: json)?.found == "nothing (missing key)")
        #expect(JSONShape.object(["name": .nullable(.integer)]).mismatch(in: json)?.description == "$.name: expected integer, found string")
        #expect(JSONShape.object(["gone": .optional(.string)]).mismatch(in: json) == nil)
        #expect(JSONShape.object(["gone": .any]).mismatch(in: json) != nil)
        #expect(JSONShape.object(["nick": .any]).mismatch(in: json) == nil)
    }
}
