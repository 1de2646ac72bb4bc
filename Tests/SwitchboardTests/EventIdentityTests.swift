import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// Events a user can act on: which send they belong to, how many attempts a failure took, the
/// documented order in every race, and content types as browsers read them.
@Suite(hangGuard, admission) struct EventIdentityTests {
    @Test(arguments: TransportUnderTest.network) func everyEventAndResponseCarriesItsSendsID(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = EventLog<Ping>()
            client.addObserver(recorder, for: Ping.self, on: .immediate) { $0.record($1) }
            let handles = Box<[RequestHandle]>([])
            let responses = Box<[UInt64]>([])
            await withTaskGroup(of: Void.self) { group in
                for n in 0..<4 {
                    group.addTask {
                        await withCheckedContinuation { continuation in
                            let handle = client.send(Ping(n: n)) { result in
                                if let id = try? result.get().sendID { responses.mutate { $0.append(id) } }
                                continuation.resume()
                            }
                            handles.mutate { $0.append(handle) }
                        }
                    }
                }
            }
            let ids = Set(handles.value.map(\.id))
            #expect(ids.count == 4)
            #expect(Set(responses.value) == ids)
            let events = recorder.events
            #expect(Set(events.map(\.sendID)) == ids)
            for id in ids {
                let mine = events.filter { $0.sendID == id }
                #expect(mine.map { Listener.name($0) } == ["started", "succeeded"], "send \(id): \(mine.map { Listener.name($0) })")
                // Each send's events are about its own request value.
                #expect(Set(mine.map(\.request.n)).count == 1)
            }
        }
    }

    @Test(arguments: TransportUnderTest.network) func aFailureSaysHowManyAttemptsItTook(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: 0.01, jitter: 0) }
            let recorder = EventLog<Get>()
            client.addObserver(recorder, for: Get.self, on: .immediate) { $0.record($1) }
            _ = await client.result(Get("/status/503"))
            let terminal = try #require(recorder.events.last)
            #expect(terminal.error?.statusCode == 503)
            #expect(terminal.attempts == 3)
            // A request that could not be built made no attempt.
            _ = await client.result(Get("file:///etc/passwd"))
            #expect(recorder.events.last?.attempts == 0)
            #expect(recorder.events.last?.error.map { if case .invalidRequest = $0 { true } else { false } } == true)
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancelAllRacingASendsStartStillDeliversStartedFirstAndOneTerminalEvent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = EventLog<Get>()
            client.addObserver(recorder, for: Get.self, on: .immediate) { $0.record($1) }
            let rounds = runsUnderThreadSanitizer ? 100 : 300
            for _ in 0..<rounds {
                let sent = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    client.send(Get("/echo"))
                    sent.signal()
                }
                DispatchQueue.global().async { client.cancelAll() }
                await withCheckedContinuation { continuation in
                    onOwnThread {
                        sent.wait(); continuation.resume()
                    }
                }
            }
            #expect(await eventually(timeout: 20) { client.inFlightCount == 0 })
            // A send leaves the in-flight table just before its terminal event is posted: wait for the posts.
            #expect(await eventually(timeout: 20) { recorder.events.filter(\.isTerminal).count >= rounds })
            let bySend = Dictionary(grouping: recorder.events, by: \.sendID)
            #expect(bySend.count == rounds)
            for (id, events) in bySend {
                let names = events.map { Listener.name($0) }
                #expect(names.first == "started", "send \(id): \(names)")
                #expect(events.filter(\.isTerminal).count == 1, "send \(id): \(names)")
                #expect(events.last?.isTerminal == true, "send \(id): \(names)")
            }
        }
    }

    @Test(arguments: TransportUnderTest.network) func aCancelBeforeStartedIsPostedWaitsForStarted(_ kind: TransportUnderTest) async throws {
        // Deterministic: the send is held in an accessory's willStart (before `started` is posted)
        // while cancelAll runs.
        try await withServer { server in
            let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            let holding = HoldingAccessory(entered: entered, release: release)
            let client = makeClient(server, on: kind) { $0.monitors = [holding] }
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            onOwnThread { client.send(Get("/echo")) }  // held in willStart: not on a global queue
            await withCheckedContinuation { continuation in
                onOwnThread {
                    entered.wait(); continuation.resume()
                }
            }
            client.cancelAll()
            release.signal()
            #expect(await eventually { log.events.count == 2 })
            #expect(log.events.map { Listener.name($0) } == ["started", "cancelled"])
            #expect(log.events.last?.attempts == 0)
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func ofTwoContentTypeLinesTheLastCounts(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/two-types/:order") { request in
                let types = request.pathParameters["order"] == "json-last" ? ["text/plain", "application/json"] : ["application/json", "text/plain"]
                return ServerResponse(status: 200, headers: types.map { ("Content-Type", $0) }, body: .data(Data(#"{"ok":true}"#.utf8)))
            }
            let client = makeClient(server, on: kind)
            let accepted = try await client.response(for: Get("/two-types/json-last"))
            #expect(accepted.json["ok"] == true)
            let refused = await client.result(Get("/two-types/text-last")).failure
            guard case .unacceptableContentType(let received, _, _) = refused else {
                Issue.record("expected unacceptableContentType, got \(String(describing: refused))")
                return
            }
            #expect(received == "text/plain")
        }
        #expect(MediaType.lastMediaType(in: #"multipart/mixed; boundary="a,b", application/json; charset=utf-8"#) == "application/json")
        #expect(MediaType.lastMediaType(in: "application/json, ") == "application/json")
    }
}

/// Holds a send in `willStart` until released.
struct HoldingAccessory: RequestAccessory {
    let entered: DispatchSemaphore
    let release: DispatchSemaphore
    func willStart(_ request: any Request) {
        entered.signal()
        // Unbounded: the test always releases it. (With a 30 s bound, a loaded machine whose pool kept
        // the test's task from running that long let the send go on before its cancel.)
        release.wait()
    }
}

/// Records events for one request type, in arrival order.
final class EventLog<R: Request>: Sendable {
    private let storage = Box<[RequestEvent<R>]>([])
    func record(_ event: RequestEvent<R>) { storage.mutate { $0.append(event) } }
    var events: [RequestEvent<R>] { storage.value }
}
