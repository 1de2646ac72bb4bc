import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import SwitchboardTesting
import Testing

/// A request whose every part a coalescing test varies.
struct Shared: Request {
    var path: String
    var method: HTTPMethod = .get
    var headers: HTTPHeaders = [:]
    var parameters: JSON? = nil
    var parameterEncoding: ParameterEncoding? = nil
    var timeout: TimeInterval? = nil
    var reportsProgress = false
    var coalesces: Bool? = nil
    var retryPolicy: RetryPolicy? = nil
    var coalescesDuplicates: Bool { coalesces ?? (method == .get || method == .head) }
    var pipeline: RequestPipeline { RequestPipeline { $0.retryPolicy = retryPolicy } }

    init(_ path: String) { self.path = path }
}

/// Identical requests in flight at once make one transfer; each send keeps its own events.
@Suite(hangGuard, admission) struct CoalescingTests {
    @Test(arguments: TransportUnderTest.network) func hundredConcurrentIdenticalGetsMakeOneServerHitAndHundredTerminalEvents(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Shared>()
            recorder.observe(client)
            let results = Box([UInt64: Result<Response<Shared>, NetworkError>]())
            let handles = (0..<100).map { _ in
                client.send(Shared("/concurrent/hundred?hold=release")) { result in
                    if case .success(let response) = result {
                        results.mutate { $0[response.sendID] = result }
                    } else {
                        results.mutate { $0[UInt64.max - UInt64($0.count)] = result }
                    }
                }
            }
            server.release("hundred")  // all hundred have joined: the one transfer may end
            let events = await recorder.waitForTerminalEvents(100, timeout: 20 * timeScale)
            #expect(server.hits("/concurrent/hundred") == 1)
            #expect(events.filter(\.isTerminal).count == 100)
            #expect(Set(events.filter(\.isTerminal).map(\.sendID)) == Set(handles.map(\.id)))
            // Each send: started, then exactly one terminal event, a success with the shared body.
            for handle in handles {
                let own = recorder.events(ofSend: handle.id)
                #expect(own.count == 2)
                #expect(own.first?.isTerminal == false)
                #expect(own.last?.response?.json["key"] == "hundred")
            }
            #expect(await eventually { results.value.count == 100 })
            #expect(results.value.values.allSatisfy { (try? $0.get()) != nil })
            #expect(client.sharedTransferCount == 0)
        }
    }

    /// Sends share a transfer by their idle timeouts as applied: NaN and 0 both mean none and share
    /// one, and the table is empty after (a NaN, equal to nothing, once made a key that never found
    /// itself: a new entry per send, never removed); another idle timeout gets a transfer of its own.
    @Test(arguments: TransportUnderTest.network) func sendsShareByTheirIdleTimeoutsAsApplied(_ kind: TransportUnderTest) async throws {
        struct Quiet: Request {
            var path: String { "/concurrent/idle?hold=release" }
            let idleTimeout: TimeInterval?
        }
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Quiet>()
            recorder.observe(client)
            for idle in [Double.nan, 0, .nan, 100] { client.send(Quiet(idleTimeout: idle)) }
            #expect(await eventually(timeout: 20) { server.hits("/concurrent/idle") >= 2 })
            server.release("idle")
            let events = await recorder.waitForTerminalEvents(4, timeout: 30 * timeScale)
            #expect(events.filter(\.isTerminal).count == 4)
            #expect(events.filter(\.isTerminal).allSatisfy { $0.response?.json["key"] == "idle" })
            #expect(server.hits("/concurrent/idle") == 2, "none (NaN, 0, NaN) shared one transfer; 100 s its own")
            #expect(await eventually { client.sharedTransferCount == 0 }, "no entry left behind")
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancellingOneOfTwoCoalescedSendsLeavesTheOtherToFinish(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Shared>()
            recorder.observe(client)
            let first = client.send(Shared("/concurrent/pair?hold=release"))
            let second = client.send(Shared("/concurrent/pair?hold=release"))
            first.cancel()
            let cancelled = try await recorder.terminalEvent(ofSend: first.id, timeout: 30)
            #expect(cancelled.error?.isCancelled == true)
            server.release("pair")
            let finished = try await recorder.terminalEvent(ofSend: second.id, timeout: 30)
            #expect(finished.response?.json["key"] == "pair")
            #expect(server.hits("/concurrent/pair") == 1)
            #expect(recorder.events(ofSend: first.id).filter(\.isTerminal).count == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aSendJoiningAfterTheFirstLeftSharesTheTransferWithTheRest(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Shared>()
            recorder.observe(client)
            let first = client.send(Shared("/concurrent/relay?hold=release"))
            let second = client.send(Shared("/concurrent/relay?hold=release"))
            first.cancel()  // leaves the shared transfer before it returns
            // Joins the transfer the first started, which the first left (the server holds it until
            // released, below).
            let third = client.send(Shared("/concurrent/relay?hold=release"))
            _ = try await recorder.terminalEvent(ofSend: first.id, timeout: 30)
            server.release("relay")
            for handle in [second, third] {
                let finished = try await recorder.terminalEvent(ofSend: handle.id, timeout: 30)
                #expect(finished.response?.json["key"] == "relay")
            }
            #expect(server.hits("/concurrent/relay") == 1)
            #expect(recorder.events(ofSend: first.id).filter(\.isTerminal).map { $0.error?.isCancelled } == [true])
            #expect(client.sharedTransferCount == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancellingEveryCoalescedSendCancelsTheTransferAndTheNextSendStartsAnew(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Shared>()
            recorder.observe(client)
            let handles = (0..<3).map { _ in client.send(Shared("/concurrent/all?ms=60000")) }  // held until cancelled, however loaded the machine
            #expect(await eventually { server.hits("/concurrent/all") == 1 })
            handles.forEach { $0.cancel() }
            let events = await recorder.waitForTerminalEvents(3, timeout: 30)
            #expect(Set(events.filter(\.isTerminal).map(\.sendID)) == Set(handles.map(\.id)), "one terminal event for each send")
            #expect(events.filter(\.isTerminal).allSatisfy { $0.error?.isCancelled == true }, "\(events.map { "\($0.sendID) \($0.kind)" })")
            #expect(client.sharedTransferCount == 0)
            let fresh = await client.result(Shared("/concurrent/all?ms=10"))
            #expect((try? fresh.get()) != nil)
            #expect(server.hits("/concurrent/all") == 2)
        }
    }

    /// Seven requests that differ: the server answers only once all seven are in (a wrong merge would
    /// leave it waiting, then count six).
    @Test(arguments: TransportUnderTest.network) func requestsThatDifferInAnythingAreNotMerged(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.maximumConnectionsPerHost = 8 }
            var withHeader = Shared("/concurrent/differ?together=7")
            withHeader.headers = ["X-Variant": "b"]
            var otherQuery = Shared("/concurrent/differ?together=7")
            otherQuery.parameters = ["page": 2]
            var post = Shared("/concurrent/differ?together=7")
            post.method = .post
            post.parameters = ["a": 1]
            post.parameterEncoding = .json
            var postOtherBody = post
            postOtherBody.parameters = ["a": 2]
            postOtherBody.coalesces = true
            var postOptIn = post
            postOptIn.coalesces = true
            let requests = [Shared("/concurrent/differ?together=7"), withHeader, otherQuery, post, post, postOptIn, postOtherBody]
            await withTaskGroup(of: Void.self) { group in
                for request in requests { group.addTask { _ = await client.result(request) } }
            }
            // plain, header, query, two POSTs (not coalesced by default), the opted-in POST, the other body.
            #expect(server.hits("/concurrent/differ") == 7)
            #expect(server.concurrencyPeak("differ") == 7, "all seven in progress at once")
        }
    }

    @Test(arguments: TransportUnderTest.network) func optedInIdenticalPostsAreMergedAndOptedOutGetsAreNot(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            // The POSTs are held until all three have been sent (and joined); the GETs, until all three
            // are in progress at once.
            var post = Shared("/concurrent/optin?hold=release")
            post.method = .post
            post.parameters = ["a": 1]
            post.coalesces = true
            var get = Shared("/concurrent/optout?together=3")
            get.coalesces = false
            let ended = Box(0)
            for request in [post, post, post, get, get, get] { client.send(request) { _ in ended.mutate { $0 += 1 } } }
            server.release("optin")
            #expect(await eventually(timeout: 30) { ended.value == 6 })
            #expect(server.hits("/concurrent/optin") == 1)
            #expect(server.hits("/concurrent/optout") == 3)
            #expect(server.concurrencyPeak("optout") == 3)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theConfigurationTurnsCoalescingOff(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.coalescesDuplicates = false }
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { _ = await client.result(Shared("/concurrent/off?together=4")) } }
            }
            #expect(server.hits("/concurrent/off") == 4)
            #expect(server.concurrencyPeak("off") == 4, "all four in progress at once, none merged")
        }
    }

    @Test(arguments: TransportUnderTest.network) func sendsThatDoNotOverlapEachMakeATransfer(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            for _ in 0..<3 { _ = await client.result(Shared("/counter/sequential")) }
            #expect(server.hits("/counter/sequential") == 3)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aCoalescedSendKeepsItsOwnDeadline(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Shared>()
            recorder.observe(client)
            var short = Shared("/concurrent/deadline?hold=release")
            short.timeout = 0.5
            let patient = client.send(Shared("/concurrent/deadline?hold=release"))
            let hasty = client.send(short)
            let timedOut = try await recorder.terminalEvent(ofSend: hasty.id, timeout: 15)  // under the server's 30 s hold
            #expect(timedOut.error.map { if case .timedOut = $0 { true } else { false } } == true)
            server.release("deadline")
            let finished = try await recorder.terminalEvent(ofSend: patient.id, timeout: 30)
            #expect(finished.response != nil)
            #expect(server.hits("/concurrent/deadline") == 1)
        }
    }

    /// Counts the sends whose attempt 2 went to the transport.
    final class SecondAttempts: EventMonitor {
        let count = Box(0)
        func request(_ send: SendContext, didAdapt urlRequest: URLRequest, attempt: Int) {
            if attempt == 2 { count.mutate { $0 += 1 } }
        }
    }

    /// One 503 is shared by both sends; each then retries on its own, and the two retries, in flight
    /// at once, share a transfer again (the retry's answer is held until both have gone out).
    @Test(arguments: TransportUnderTest.network) func aSharedFailureReachesEverySendAndEachRetriesOnItsOwn(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let arrivals = Box(0)
            let retriesOut = Box(false)
            let bothSent = Box(false)
            server.route(nil, "/retry-shared") { request in
                let number = arrivals.mutate { value -> Int in
                    value += 1
                    return value
                }
                // The 503 waits until both sends were made (a send joins a transfer as it is made), so
                // a loaded machine can't end the first transfer before the second joins it.
                if number == 1 {
                    request.wait(timeout: 30) { bothSent.value }
                    return .status(503)
                }
                request.wait(timeout: 30) { retriesOut.value }
                return .json(["ok": true])
            }
            let monitor = SecondAttempts()
            let client = makeClient(server, on: kind) { $0.monitors = [monitor] }
            var request = Shared("/retry-shared")
            request.retryPolicy = RetryPolicy(maximumAttempts: 2, initialDelay: 0)
            let results = Box([Result<Response<Shared>, NetworkError>]())
            // Sent back to back from this task: the second joins the first's transfer.
            for _ in 0..<2 { client.send(request) { result in results.mutate { $0.append(result) } } }
            bothSent.mutate { $0 = true }
            #expect(await eventually(timeout: 20) { monitor.count.value == 2 }, "both sends retried")
            retriesOut.mutate { $0 = true }
            #expect(await eventually(timeout: 20) { results.value.count == 2 })
            #expect(results.value.allSatisfy { (try? $0.get())?.attempts == 2 }, "\(results.value)")
            #expect(arrivals.value == 2, "one shared 503, then one shared retry")
        }
    }

    @Test(arguments: TransportUnderTest.network) func everyCoalescedSendGetsProgress(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let seen = Box([UInt64: Int64]())
            var request = Shared("/drip?chunks=4&interval=100&size=1000")
            request.reportsProgress = true
            // Registered before the sends: the drip may be over before a later registration.
            client.addObserver(seen, for: Shared.self, on: .immediate) { seen, event in
                if let progress = event.progress { seen.mutate { $0[event.sendID] = max($0[event.sendID] ?? 0, progress.bytesReceived) } }
            }
            let handles = (0..<2).map { _ in
                client.send(request, progress: { _ in }) { _ in }
            }
            #expect(await eventually(timeout: 30) { handles.allSatisfy(\.isFinished) })
            #expect(server.hits("/drip") == 1)
            for handle in handles { #expect(seen.value[handle.id] == 4000) }
        }
    }

    /// A cancel that lands while one of the send's progress events is being delivered is delivered
    /// after it: a second observer never hears progress after `cancelled`. (The cancel used to be
    /// delivered from a global queue at once, while the first observer still held the progress event.)
    @Test(arguments: TransportUnderTest.network) func aCoalescedSendCancelledDuringItsProgressHearsNoProgressAfterCancelled(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            // Both observers registered before the sends, and the second send known by its `started`
            // event (posted inside `send`, before any of its progress): no window to miss.
            var request = Shared("/drip?chunks=40&interval=100&size=1000")
            request.reportsProgress = true
            let started = Box([UInt64]())
            let held = Box(false)
            let cancelled = DispatchSemaphore(value: 0)
            client.addObserver(held, for: Shared.self, on: .immediate) { held, event in
                if case .started = event.kind { started.mutate { $0.append(event.sendID) } }
                let ids = started.value
                guard ids.count == 2, event.sendID == ids[1], event.progress != nil, !held.value else { return }
                held.mutate { $0 = true }
                _ = cancelled.wait(timeout: .now() + 20)  // until the cancel below has landed
            }
            let heard = Box([String]())
            client.addObserver(heard, for: Shared.self, on: .immediate) { heard, event in
                let ids = started.value
                guard ids.count == 2, event.sendID == ids[1] else { return }
                heard.mutate { $0.append(event.progress != nil ? "progress" : event.isTerminal ? "terminal" : "other") }
            }
            let first = client.send(request) { _ in }
            let second = client.send(request) { _ in }
            #expect(started.value == [first.id, second.id])
            #expect(await eventually(timeout: 30) { held.value })
            second.cancel()
            cancelled.signal()
            #expect(await eventually(timeout: 30) { first.isFinished && second.isFinished })
            #expect(server.hits("/drip") == 1, "the two sends shared one transfer")
            #expect(await eventually(timeout: 5 * timeScale) { heard.value.contains("terminal") })
            let terminal = try #require(heard.value.firstIndex(of: "terminal"))
            #expect(heard.value[(terminal + 1)...].isEmpty, "heard after the terminal event: \(heard.value)")
            #expect(heard.value.filter { $0 == "terminal" }.count == 1)
        }
    }

    @Test func stubbedSendsAreCoalescedToo() async throws {
        let stub = StubTransport()
        stub.on(Shared.self, answer: .json(["ok": true], delay: 60))
        let client = Dispatcher.stubbed(stub)
        // The answer waits 60 s, so all five are in flight at once, whatever the machine's load.
        let cancelled = Box([Bool]())
        for _ in 0..<5 { client.send(Shared("/same")) { result in cancelled.mutate { $0.append(result.failure?.isCancelled == true) } } }
        #expect(stub.recorded(of: Shared.self).count == 1)
        #expect(client.sharedTransferCount == 1)
        #expect(client.inFlightCount == 5)
        client.cancelAll()
        #expect(await eventually(timeout: 20) { cancelled.value.count == 5 })
        #expect(cancelled.value == Array(repeating: true, count: 5))
        #expect(stub.recorded(of: Shared.self).count == 1)
    }
}
