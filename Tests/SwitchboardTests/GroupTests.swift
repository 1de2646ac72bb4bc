import Foundation
import LoopbackServer
import Switchboard
import Testing

/// Batches, chains and graphs against the loopback server.
@Suite(hangGuard, admission) struct BatchTests {
    /// A request type of its own per test, so observers don't see other tests' members.
    struct Slow: Request {
        let ms: Int
        var tag = ""
        var path: String { "/delay/\(ms)?tag=\(tag)" }
    }

    @Test(arguments: TransportUnderTest.network) func responsesComeBackInTheOrderGivenWhateverOrderTheyFinish(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let batch = BatchRequest([Slow(ms: 300), Get("/users/7"), Slow(ms: 10), Get("/status/204").with(\.responseFormat, .data)], dispatcher: client)
            let responses = try await batch.run()
            #expect(responses.count == 4)
            #expect(responses[0].typed(Slow.self)?.json["delayed"] == 300)
            #expect(responses[1].typed(Get.self)?.json["user"]["id"] == "7")
            #expect(responses[2].json["delayed"] == 10)
            #expect(responses[3].statusCode == 204)
            #expect(responses[0].typed(Get.self) == nil, "a response is only its own request's type")
        }
    }

    @Test(arguments: TransportUnderTest.network) func theTypedFormReturnsATupleWithoutCasting(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let (slow, user, status) = try await makeClient(server, on: kind).batch(Slow(ms: 50), Get("/users/42"), Get("/status/200"))
            let delayed: Int? = slow.json["delayed"].int  // Response<Slow>, no cast
            #expect(delayed == 50)
            #expect(user.request.path == "/users/42" && user.json["user"]["id"] == "42")
            #expect(status.statusCode == 200)
        }
    }

    /// A member the server holds until it stops (never answered).
    struct Held: Request {
        var tag = ""
        var path: String { "/held?tag=\(tag)" }
    }

    /// Fail-fast with every member started: the 500 is answered only once both held members have
    /// reached the server, so both are cancelled (not waited for), each with one terminal event.
    @Test(arguments: TransportUnderTest.network) func failFastCancelsTheOthersAtOnceAndNamesTheFailure(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let held = RequestGate()  // never opened
            server.route(nil, "/held") { request in
                held.pass(request)
                return .status(200)
            }
            server.route(nil, "/fails-once-both-are-held") { request in
                request.wait { held.arrived == 2 }
                return .status(500)
            }
            let client = makeClient(server, on: kind)
            let log = EventLog<Held>()
            client.addObserver(log, for: Held.self, on: .immediate) { $0.record($1) }
            let batch = BatchRequest([Held(tag: "a"), Get("/fails-once-both-are-held"), Held(tag: "b")], dispatcher: client)
            do throws(GroupError) {
                _ = try await batch.run()
                Issue.record("the batch should fail")
            } catch {
                #expect(error.failed?.index == 1)
                #expect(error.failed?.request is Get)
                #expect(error.error.statusCode == 500)
                let outcomes = error.outcomes.map { $0.result == nil ? "never started" : $0.error?.isCancelled == true ? "cancelled" : "other" }
                #expect(outcomes == ["cancelled", "other", "cancelled"])
            }
            #expect(await eventually(timeout: 30) { log.events.filter(\.isTerminal).count == 2 })
            #expect(log.events.filter { if case .started = $0.kind { true } else { false } }.count == 2)
            #expect(log.events.filter(\.isTerminal).allSatisfy { if case .cancelled = $0.kind { true } else { false } })
        }
    }

    /// Fail-fast when the failure comes while a member has not started yet (two at a time): that
    /// member is never sent, and its outcome is `nil`.
    @Test(arguments: TransportUnderTest.network) func failFastNeverStartsAMemberNotYetLaunched(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let held = RequestGate()
            let tags = Box([String]())
            server.route(nil, "/held") { request in
                tags.mutate { $0.append(request.queryItems["tag"] ?? "?") }
                held.pass(request)
                return .status(200)
            }
            let client = makeClient(server, on: kind)
            let batch = BatchRequest([Held(tag: "a"), Get("/status/500"), Held(tag: "b")], maximumConcurrency: 2, dispatcher: client)
            do throws(GroupError) {
                _ = try await batch.run()
                Issue.record("the batch should fail")
            } catch {
                #expect(error.failed?.index == 1)
                let outcomes = error.outcomes.map { $0.result == nil ? "never started" : $0.error?.isCancelled == true ? "cancelled" : "other" }
                #expect(outcomes == ["cancelled", "other", "never started"])
            }
            #expect(await settled(client))
            #expect(!tags.value.contains("b"), "the third member never reached the server: \(tags.value)")
        }
    }

    /// Collect-all names the failure that came first in time: the other failing member is held at the
    /// server until three members have ended (so the named one's failure was recorded first).
    @Test(arguments: [1, 3]) func collectAllRunsEveryMemberAndReportsEachOutcome(failingFirst: Int) async throws {
        try await withServer { server in
            let late = RequestGate()
            server.route(nil, "/late/:code") { request in
                late.pass(request)
                return .status(Int(request.pathParameters["code"] ?? "") ?? 599)
            }
            let members: [any Request] = [
                Get("/users/1"), Get(failingFirst == 1 ? "/status/500" : "/late/500"), Slow(ms: 100), Get(failingFirst == 3 ? "/status/404" : "/late/404"),
            ]
            let batch = BatchRequest(members, failureMode: .collectAll, dispatcher: makeClient(server))
            batch.addObserver(on: .immediate) { event in
                if case .progress(let completed, _) = event, completed == 3 { late.open() }
            }
            do throws(GroupError) {
                _ = try await batch.run()
                Issue.record("the batch should fail")
            } catch {
                #expect(error.failed?.index == failingFirst)
                #expect(error.outcomes.map { $0.response != nil } == [true, false, true, false])
                #expect(error.outcomes.map { $0.error?.statusCode } == [nil, 500, nil, 404])
            }
            #expect(server.hits("/delay/100") == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theConcurrencyLimitHoldsAndProgressCountsUp(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let requests = (0..<6).map { Get("/concurrent/limited?together=2&of=6&i=\($0)") }
            let progress = Locked([Int]())
            let done = Locked<Result<[any AnyResponse], GroupError>?>(nil)
            let batch = BatchRequest(requests, maximumConcurrency: 2, dispatcher: client)
            batch.start(
                progress: { completed, total in
                    #expect(total == 6)
                    progress.withLock { $0.append(completed) }
                }, success: { responses in done.withLock { $0 = .success(responses) } }, failure: { error in done.withLock { $0 = .failure(error) } })
            #expect(await eventually(timeout: 20) { done.withLock { $0 } != nil })
            #expect(server.concurrencyPeak("limited") == 2)
            #expect((try? done.withLock { $0 }?.get())?.map { $0.json["index"].int } == [0, 1, 2, 3, 4, 5])
            #expect(progress.withLock { $0 } == [1, 2, 3, 4, 5, 6])

            _ = try await BatchRequest((0..<4).map { Get("/concurrent/free?together=4&i=\($0)") }, dispatcher: client).run()
            #expect(server.concurrencyPeak("free") == 4, "without a limit they run together")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aBatchStartsOnceAndStopCancelsItsMembers(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let batch = BatchRequest([Get("/users/1")], dispatcher: client)
            _ = try await batch.run()
            await #expect(throws: GroupError.self) { _ = try await batch.run() }
            do throws(GroupError) {
                _ = try await batch.run()
                Issue.record("a batch runs once")
            } catch {
                #expect(error.error.invalidReason?.contains("already started") == true)
            }

            let log = EventLog<Slow>()
            client.addObserver(log, for: Slow.self, on: .immediate) { $0.record($1) }
            let long = BatchRequest([Slow(ms: 60_000, tag: "a"), Slow(ms: 60_000, tag: "b")], dispatcher: client)
            let events = Locked([GroupEvent]())
            long.addObserver(on: .immediate) { event in events.withLock { $0.append(event) } }
            let ended = Locked<GroupError?>(nil)
            long.start(failure: { error in ended.withLock { $0 = error } })  // from this thread, not a child task
            #expect(await eventually(timeout: 30) { server.hits("/delay/60000") == 2 })
            long.stop()
            #expect(await eventually(timeout: 30) { ended.withLock { $0 } != nil })
            #expect(ended.withLock { $0 }?.isCancelled == true)
            #expect(await eventually(timeout: 30) { log.events.filter(\.isTerminal).count == 2 })
            #expect(events.withLock { $0 }.first.map { if case .started = $0 { true } else { false } } == true)
            #expect(events.withLock { $0 }.last.map { if case .cancelled = $0 { true } else { false } } == true)
            #expect(events.withLock { $0 }.filter(\.isTerminal).count == 1)
        }
    }

    @MainActor final class Delegate: BatchRequestDelegate, ChainRequestDelegate {
        var finished = 0, failed: [GroupError] = []
        func batchRequestFinished(_ batch: BatchRequest) { finished += 1 }
        func batchRequestFailed(_ batch: BatchRequest, error: GroupError) { failed.append(error) }
        func chainRequestFinished(_ chain: ChainRequest) { finished += 1 }
        func chainRequestFailed(_ chain: ChainRequest, error: GroupError) { failed.append(error) }
    }

    final class Spinner: GroupAccessory {
        let calls = Locked([String]())
        func willStart(_ group: any RequestGroup) { calls.withLock { $0.append("willStart") } }
        func willStop(_ group: any RequestGroup, error: GroupError?) { calls.withLock { $0.append("willStop \(error == nil)") } }
        func didStop(_ group: any RequestGroup, error: GroupError?) { calls.withLock { $0.append("didStop") } }
    }

    @Test(arguments: TransportUnderTest.network) func theDelegateAndAccessoriesHearTheEndOnTheMainActor(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.callbackQueue = .main }
            let delegate = await MainActor.run { Delegate() }
            let spinner = Spinner()
            let batch = BatchRequest([Get("/users/1"), Get("/users/2")], dispatcher: client)
            await MainActor.run { batch.delegate = delegate }
            batch.accessories = [spinner]
            let order = Locked([String]())
            batch.addObserver { event in if event.isTerminal { order.withLock { $0.append("observer") } } }
            batch.start(success: { _ in order.withLock { $0.append("closure") } })
            #expect(await eventually(timeout: 30) { spinner.calls.withLock { $0.count } == 3 })
            #expect(await MainActor.run { delegate.finished == 1 && delegate.failed.isEmpty })
            #expect(spinner.calls.withLock { $0 } == ["willStart", "willStop true", "didStop"])
            #expect(order.withLock { $0 } == ["closure", "observer"])
        }
    }

    /// Weak references to groups, to see them go.
    struct Gone: Sendable {
        weak var batch: BatchRequest?
        weak var chain: ChainRequest?
        weak var graph: RequestGraph?
        var all: Bool { batch == nil && chain == nil && graph == nil }
    }

    @Test(arguments: TransportUnderTest.network) func aFinishedGroupIsReleased(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            var gone = Gone()
            do {
                let strongBatch = BatchRequest([Get("/users/1"), Get("/status/500")], dispatcher: client)
                gone.batch = strongBatch
                do throws(GroupError) {
                    _ = try await strongBatch.run()
                    Issue.record("the batch should fail")
                } catch {
                    #expect(error.failed?.index == 1 && error.error.statusCode == 500)
                }
                let strongChain = ChainRequest(dispatcher: client)
                strongChain.add(Get("/users/1")) { chain, _ in chain.add(Get("/users/2")) }
                gone.chain = strongChain
                _ = try await strongChain.run()
                let strongGraph = RequestGraph(dispatcher: client)
                strongGraph.add("a", Get("/users/1"))
                strongGraph.add("b", dependsOn: ["a"]) { _ in Get("/users/2") }
                gone.graph = strongGraph
                _ = try await strongGraph.run()
            }
            let watched = gone
            #expect(await eventually(timeout: 30) { watched.all }, "nothing keeps a group after it ended")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aGroupStartedWithoutAReferenceRunsToItsEnd(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let done = Locked(false)
            BatchRequest([Slow(ms: 200)], dispatcher: makeClient(server, on: kind)).start(success: { _ in done.withLock { $0 = true } })
            #expect(await eventually(timeout: 30) { done.withLock { $0 } })
        }
    }
}

@Suite(hangGuard, admission) struct ChainTests {
    struct Register: Request {
        var method: HTTPMethod { .post }
        var path: String { "/register" }
        var parameters: JSON? { ["username": "ada", "password": "secret"] }
    }

    struct UserInfo: Request {
        let id: String
        var path: String { "/users/\(id)" }
    }

    @Test(arguments: TransportUnderTest.network) func eachCallbackRunsBeforeTheNextRequestAndMayAddIt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let chain = ChainRequest(dispatcher: client)
            let steps = Locked([String]())
            chain.add(Register()) { chain, response in
                steps.withLock { $0.append("registered \(response.json["userId"].string ?? "?")") }
                chain.add(UserInfo(id: response.json["userId"].string ?? "")) { _, user in
                    steps.withLock { $0.append("user \(user.json["user"]["id"].string ?? "?")") }
                }
            }
            let responses = try await chain.run()
            #expect(responses.count == 2)
            let id = responses[0].json["userId"].string
            #expect(id != nil && responses[1].typed(UserInfo.self)?.request.id == id)
            #expect(steps.withLock { $0 } == ["registered \(id ?? "")", "user \(id ?? "")"])
            #expect(chain.progress == (2, 2))
        }
    }

    @Test(arguments: TransportUnderTest.network) func aFailureEndsTheChainWithTheFailedRequestAndTheRestNeverRun(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let chain = ChainRequest(dispatcher: makeClient(server, on: kind))
            let delegate = BatchTests.Delegate()
            await MainActor.run { chain.delegate = delegate }
            chain.add(Get("/users/1"))
            chain.add(Get("/status/503"))
            chain.add(Get("/users/3"))
            do throws(GroupError) {
                _ = try await chain.run()
                Issue.record("the chain should fail")
            } catch {
                #expect(error.failed?.index == 1 && error.error.statusCode == 503)
                #expect(error.outcomes.map { $0.result == nil } == [false, false, true])
            }
            #expect(server.hits("/users/3") == 0)
            #expect(await eventually(timeout: 30) { await MainActor.run { delegate.failed.count } == 1 })
        }
    }

    @Test(arguments: TransportUnderTest.network) func stopCancelsTheCurrentRequestAndNoCallbackRunsAfter(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let chain = ChainRequest(dispatcher: client)
            let callbacks = Locked(0)
            chain.add(Get("/delay/60000")) { chain, _ in
                callbacks.withLock { $0 += 1 }
                chain.add(Get("/users/2"))
            }
            let ended = Locked([GroupError]())
            chain.start(success: { _ in Issue.record("a stopped chain can't succeed") }, failure: { error in ended.withLock { $0.append(error) } })
            #expect(await eventually(timeout: 30) { server.hits("/delay/60000") == 1 })
            chain.stop()
            chain.stop()
            #expect(await eventually(timeout: 30) { ended.withLock { $0.count } == 1 })
            #expect(await settled(client))
            #expect(ended.withLock { $0.count } == 1 && ended.withLock { $0[0].isCancelled })
            #expect(callbacks.withLock { $0 } == 0 && server.hits("/users/2") == 0)
        }
    }
}

@Suite(hangGuard, admission) struct RequestGraphTests {
    @Test(arguments: TransportUnderTest.network) func aDiamondRunsInDependencyOrderWithTheMiddleInParallel(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let graph = RequestGraph(dispatcher: makeClient(server, on: kind))
            graph.add("top", Get("/users/1"))
            graph.add("left", dependsOn: ["top"]) { done in Get("/concurrent/diamond?together=2&i=\(done["top"]?.json["user"]["id"].string ?? "?")") }
            graph.add("right", dependsOn: ["top"], Get("/concurrent/diamond?together=2&i=2"))
            graph.add("bottom", dependsOn: ["left", "right"]) { done in
                Get("/users/\((done["left"]?.json["index"].int ?? 0) + (done["right"]?.json["index"].int ?? 0))")
            }
            let results = try await graph.run()
            #expect(server.concurrencyPeak("diamond") == 2, "left and right ran together")
            #expect(results.response("bottom", as: Get.self)?.json["user"]["id"] == "3", "built from both middles (1 + 2)")
            #expect(results.responses.count == 4)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aCycleOrAMissingDependencyFailsBeforeAnythingIsSent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let cyclic = RequestGraph(dispatcher: client)
            cyclic.add("a", dependsOn: ["c"], Get("/users/1"))
            cyclic.add("b", dependsOn: ["a"], Get("/users/2"))
            cyclic.add("c", dependsOn: ["b"], Get("/users/3"))
            cyclic.add("d", Get("/users/4"))
            do throws(GroupError) { _ = try await cyclic.run(); Issue.record("a cycle must fail") } catch {
                #expect(error.error.invalidReason?.contains("cycle") == true, "\(error)")
            }
            let missing = RequestGraph(dispatcher: client)
            missing.add("a", dependsOn: ["ghost"], Get("/users/1"))
            do throws(GroupError) { _ = try await missing.run(); Issue.record("a missing dependency must fail") } catch {
                #expect(error.error.invalidReason?.contains("\"ghost\"") == true, "\(error)")
            }
            let twice = RequestGraph(dispatcher: client)
            twice.add("a", Get("/users/1"))
            twice.add("a", Get("/users/2"))
            do throws(GroupError) { _ = try await twice.run(); Issue.record("a name used twice must fail") } catch {
                #expect(error.error.isInvalidRequest)
            }
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aFailedNodeCancelsItsDependentsAndIndependentNodesStillRun(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let graph = RequestGraph(maximumConcurrency: 2, dispatcher: makeClient(server, on: kind))
            graph.add("root", Get("/users/1"))
            graph.add("broken", dependsOn: ["root"], Get("/status/500"))
            graph.add("child", dependsOn: ["broken"], Get("/users/2"))
            graph.add("grandchild", dependsOn: ["child"]) { _ in Get("/users/3") }
            graph.add("independent", Get("/users/4"))
            do throws(GroupError) {
                _ = try await graph.run()
                Issue.record("the graph should fail")
            } catch {
                #expect(error.failed?.name == "broken" && error.error.statusCode == 500)
                let byName = Dictionary(uniqueKeysWithValues: error.outcomes.map { ($0.name ?? "", $0) })
                #expect(byName["root"]?.response != nil && byName["independent"]?.response != nil)
                #expect(byName["child"]?.error?.isCancelled == true && byName["grandchild"]?.error?.isCancelled == true)
                #expect(byName["grandchild"]?.request is NotBuilt)
            }
            #expect(server.hits("/users/2") == 0 && server.hits("/users/3") == 0)
            #expect(server.hits("/users/4") == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aNodeWhoseRequestCannotBeBuiltFailsAsInvalid(_ kind: TransportUnderTest) async throws {
        struct Missing: Error {}
        try await withServer { server in
            let graph = RequestGraph(dispatcher: makeClient(server, on: kind))
            graph.add("a", Get("/users/1"))
            graph.add("b", dependsOn: ["a"]) { _ -> Get in throw Missing() }
            do throws(GroupError) { _ = try await graph.run(); Issue.record("b can't be built") } catch {
                #expect(error.failed?.name == "b" && error.error.isInvalidRequest)
            }
        }
    }
}

/// The review's cases: a stop before the start, a cancelled task, a node added late, what an ended
/// group lets go of.
@Suite(hangGuard, admission) struct GroupEdgeTests {
    @Test(arguments: TransportUnderTest.network) func aGroupStoppedBeforeItStartsOrRunFromACancelledTaskSendsNothing(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let batch = BatchRequest([Get("/users/1")], dispatcher: client)
            batch.stop()
            do throws(GroupError) { _ = try await batch.run(); Issue.record("a stopped batch can't succeed") } catch { #expect(error.isCancelled) }

            let chain = ChainRequest(dispatcher: client)
            chain.add(Get("/users/2"))
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await chain.run()
            }
            #expect((await task.result.failure as? GroupError)?.isCancelled == true)

            let graph = RequestGraph(dispatcher: client)
            graph.add("a", Get("/users/3"))
            graph.stop()
            do throws(GroupError) { _ = try await graph.run(); Issue.record("a stopped graph can't succeed") } catch { #expect(error.isCancelled) }
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aNodeAddedAfterTheStartFailsTheGraph(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let file = LargeResource(length: 1 << 20)
            file.hold(atOffset: 0)  // node "a" runs until released, however loaded the machine
            server.serve(file, at: "/files/held.bin")
            let graph = RequestGraph(dispatcher: makeClient(server, on: kind) { $0.idleTimeout = 120 })  // held, not idle
            graph.add("a", Get("/files/held.bin").with(\.responseFormat, .data))
            let ended = Locked<Result<GraphResults, GroupError>?>(nil)
            graph.start { result in ended.withLock { $0 = result } }  // from this thread, not a child task
            #expect(await eventually(timeout: 30) { file.requests.count == 1 })
            graph.add("late", Get("/users/1"))
            file.release()
            #expect(await eventually(timeout: 30) { ended.withLock { $0 } != nil })
            let error = ended.withLock { $0 }?.failure
            #expect(error?.error.invalidReason?.contains("\"late\" was added after the graph started") == true, "\(String(describing: error))")
            #expect(server.hits("/users/1") == 0)
        }
    }

    final class Screen: Sendable {}

    @Test(arguments: TransportUnderTest.network) func anEndedGroupLetsGoOfItsObserversAndCallbacks(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            weak var screen: Screen?
            let chain = ChainRequest(dispatcher: client)
            do {
                let owner = Screen()
                screen = owner
                chain.addObserver(on: .immediate) { _ in withExtendedLifetime(owner) {} }
                chain.add(Get("/users/1")) { _, _ in withExtendedLifetime(owner) {} }
            }
            _ = try await chain.run()
            let gone = await eventually(timeout: 5) { [weak screen] in screen == nil }
            #expect(gone, "the chain, still held, no longer keeps what its observer and callback captured")
            withExtendedLifetime(chain) {}
        }
    }
}
