import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import SwitchboardTesting
import Testing

/// The helpers app developers use to test their observers without a network.
@Suite(hangGuard, admission) struct SwitchboardTestingTests {
    func client(_ stub: StubTransport) -> Dispatcher {
        Dispatcher(
            configuration: Configuration {
                $0.baseURL = URL(string: "https://api.test"); $0.callbackQueue = .immediate
            }, transport: stub)
    }

    @Test func stubAnswersAndRecordingObserverSeesEveryEvent() async {
        let stub = StubTransport { request in
            request.url?.path == "/echo" ? .json(["user": ["name": "Ada"]]) : .status(404)
        }
        let sb = client(stub)
        let recorder = RecordingObserver<Ping>()
        recorder.observe(sb)
        sb.send(Ping())
        let events = await recorder.waitForTerminalEvents(1, timeout: 30)
        #expect(events.count == 2)
        #expect(events.last?.response?.json["user"]["name"] == "Ada")
        #expect(stub.requests.map { $0.url?.path } == ["/echo"])
    }

    @Test func stubbedStatusAndErrorsBecomeTypedFailures() async {
        let stub = StubTransport(failing: { request in
            request.url?.path == "/boom" ? .failure(.transport(URLError(.notConnectedToInternet))) : .success(.status(503))
        })
        let sb = client(stub)
        let status = await sb.result(Get("/x")).failure
        #expect(status?.statusCode == 503)
        let offline = await sb.result(Get("/boom")).failure
        guard case .transport(let urlError) = offline else {
            Issue.record("expected transport, got \(String(describing: offline))")
            return
        }
        #expect(urlError.code == .notConnectedToInternet)
    }

    @Test func cancellingAStubbedDelayedRequestDeliversCancelledOnce() async {
        let stub = StubTransport { _ in StubTransport.Answer(status: 200, body: Data("{}".utf8), delay: 5) }
        let sb = client(stub)
        let recorder = RecordingObserver<Ping>()
        recorder.observe(sb)
        sb.send(Ping()).cancel()
        let events = await recorder.waitForTerminalEvents(1, timeout: 30)
        #expect(events.map(\.isTerminal) == [false, true])
        #expect(events.last?.error?.isCancelled == true)
    }

    @Test func waitingTimesOutInsteadOfHanging() async {
        let recorder = RecordingObserver<Ping>()
        let events = await recorder.waitForTerminalEvents(1, timeout: 0.1)
        #expect(events.isEmpty)
    }

    @Test func priorityMapsToTaskPriority() {
        #expect(RequestPriority.low.taskPriority < RequestPriority.default.taskPriority)
        #expect(RequestPriority.high.taskPriority > RequestPriority.default.taskPriority)
    }
}

/// The request a profile screen sends.
struct GetProfile: Request {
    var id: String
    var path: String { "/users/\(id)" }
    var validation: Validation { Validation(shape: .object(["user": .object(["name": .string])])) }
}

/// A small profile screen's model, as an app would write it: it observes `GetProfile` and keeps what the
/// screen shows.
@MainActor final class ProfileScreenModel {
    enum Display: Equatable { case empty, loading, loaded(name: String), failed(message: String) }
    private(set) var display = Display.empty
    private(set) var changes = 0
    let client: Dispatcher

    init(client: Dispatcher) {
        self.client = client
        client.addObserver(self, for: GetProfile.self, calling: ProfileScreenModel.profileChanged)
    }

    func load(id: String) { client.send(GetProfile(id: id), owner: self) }

    func profileChanged(_ event: RequestEvent<GetProfile>) {
        changes += 1
        switch event.kind {
        case .started: display = .loading
        case .succeeded(let response): display = .loaded(name: response.json["user"]["name"].string ?? "?")
        case .failed(_, let error): display = .failed(message: error.statusCode.map { "HTTP \($0)" } ?? "\(error)")
        case .cancelled, .progress, .cached: break
        }
    }
}

/// The helpers used the way an app developer would: a profile screen tested end to end, without a network.
@Suite(hangGuard, admission) struct ProfileScreenTests {
    @MainActor @Test func theScreenShowsTheNameFromTheStubbedResponse() async throws {
        let stub = StubTransport()
        stub.on(GetProfile.self) { request, _ in .json(["user": ["name": .string("Ada \(request.id)")]]) }
        let client = Dispatcher.stubbed(stub)
        let recorder = RecordingObserver<GetProfile>()
        recorder.observe(client, on: .main)
        let screen = ProfileScreenModel(client: client)
        screen.load(id: "42")
        #expect(screen.display == .empty)  // events come later, on the main queue
        _ = try await recorder.terminalEvent(timeout: 30)
        await eventuallyOnMain { screen.display == .loaded(name: "Ada 42") }
        #expect(screen.display == .loaded(name: "Ada 42"))
        #expect(stub.recorded(of: GetProfile.self).map(\.url?.path) == ["/users/42"])
    }

    @MainActor @Test func theScreenShowsAServerErrorAndARetriedSuccess() async throws {
        let stub = StubTransport()
        stub.on("/users/*", method: .get, answers: [.status(503), .json(["user": ["name": "Grace"]])])
        let client = Dispatcher.stubbed(stub)
        let recorder = RecordingObserver<GetProfile>()
        recorder.observe(client, on: .main)
        let screen = ProfileScreenModel(client: client)
        screen.load(id: "1")
        _ = try await recorder.terminalEvent(timeout: 30)
        await eventuallyOnMain { screen.display == .failed(message: "HTTP 503") }
        #expect(screen.display == .failed(message: "HTTP 503"))
        recorder.reset()
        screen.load(id: "1")
        _ = try await recorder.terminalEvent(timeout: 30)
        await eventuallyOnMain { screen.display == .loaded(name: "Grace") }
        #expect(screen.display == .loaded(name: "Grace"))
    }

    @MainActor @Test func aMalformedProfileIsAShapeErrorOnScreen() async throws {
        let stub = StubTransport()
        stub.on(GetProfile.self, answer: .json(["user": ["name": 7]]))
        let client = Dispatcher.stubbed(stub)
        let recorder = RecordingObserver<GetProfile>()
        recorder.observe(client, on: .main)
        let screen = ProfileScreenModel(client: client)
        screen.load(id: "1")
        let event = try await recorder.terminalEvent(timeout: 30)
        #expect(event.error.map { if case .jsonShape = $0 { true } else { false } } == true)
        await eventuallyOnMain { if case .failed = screen.display { true } else { false } }
        guard case .failed(let message) = screen.display else {
            Issue.record("expected a failure on screen, got \(screen.display)")
            return
        }
        #expect(message.contains("user.name"))
    }

    @MainActor @Test func closingTheScreenCancelsItsRequest() async throws {
        let stub = StubTransport()
        stub.on(GetProfile.self, answer: .json(["user": ["name": "Late"]], delay: 10))
        let client = Dispatcher.stubbed(stub)
        let recorder = RecordingObserver<GetProfile>()
        recorder.observe(client)
        var screen: ProfileScreenModel? = ProfileScreenModel(client: client)
        screen?.load(id: "1")
        screen = nil
        let event = try await recorder.terminalEvent(timeout: 30)  // the stub answers at 10 s: a success, unless cancelled
        #expect(event.error?.isCancelled == true)
    }
}

/// The stub's rules, recording and waits.
@Suite(hangGuard, admission) struct StubRuleTests {
    @Test func newestMatchingRuleWinsAndUnmatchedRequestsFailClearly() async {
        let stub = StubTransport()
        stub.on("/**", answer: .status(404))
        stub.on(Ping.self, answer: .json(["from": "type"]))
        stub.on("https://stub.test/echo", answer: .json(["from": "url"]))
        let client = Dispatcher.stubbed(stub)
        #expect((try? await client.result(Ping()).get())?.json["from"] == "url")
        #expect(await client.result(Get("/missing")).failure?.statusCode == 404)
        stub.reset()
        let unmatched = await client.result(Get("/missing")).failure
        guard case .invalidRequest(let reason)? = unmatched else {
            Issue.record("expected invalidRequest, got \(String(describing: unmatched))")
            return
        }
        #expect(reason.contains("GET https://stub.test/missing"))
        #expect(stub.recorded.count == 1)
    }

    @Test func globsMatchSegmentsAndWholeURLs() async {
        let stub = StubTransport()
        stub.on("/users/*", answer: .json(["one": true]))
        stub.on("/files/**", answer: .json(["deep": true]))
        stub.on("https://stub.test/search?q=*", method: .get, answer: .json(["search": true]))
        let client = Dispatcher.stubbed(stub)
        #expect((try? await client.result(Get("/users/7")).get())?.json["one"] == true)
        #expect(await client.result(Get("/users/7/posts")).failure?.isInvalidRequest == true)
        #expect((try? await client.result(Get("/files/a/b/c.txt")).get())?.json["deep"] == true)
        #expect((try? await client.result(Get("/search?q=swift")).get())?.json["search"] == true)
        var post = Get("/search?q=swift")
        post.method = .post
        #expect(await client.result(post).failure?.isInvalidRequest == true)
    }

    @Test func aSequenceAnswersRetriesInTurnAndRepeatsItsLast() async {
        let stub = StubTransport()
        stub.on(Ping.self, answers: [.status(503), .status(503), .json(["ok": true])])
        let client = Dispatcher.stubbed(stub) { $0.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: 0) }
        let response = try? await client.result(Ping()).get()
        #expect(response?.attempts == 3)
        #expect((try? await client.result(Ping()).get())?.json["ok"] == true)
        #expect(stub.recorded(of: Ping.self).count == 4)
    }

    @Test func failuresHeadersDelaysAndTheRecordedBody() async {
        let stub = StubTransport()
        stub.on(Echo.self, answer: .failure(.transport(URLError(.networkConnectionLost)), delay: 0.05))
        stub.on(Ping.self, answer: .json(["ok": true], headers: ["X-Trace": "t1"]))
        let client = Dispatcher.stubbed(stub)
        let lost = await client.result(Echo()).failure
        #expect(lost.map { if case .transport(let error) = $0 { error.code == .networkConnectionLost } else { false } } == true)
        #expect((try? await client.result(Ping()).get())?.httpResponse.value(forHTTPHeaderField: "X-Trace") == "t1")
        var post = Echo()
        post.method = .post
        post.parameters = ["name": "Ada"]
        post.parameterEncoding = .json
        _ = await client.result(post)
        #expect(stub.recorded(of: Echo.self).last?.json?["name"] == "Ada")
        #expect(stub.recorded(of: Echo.self).last?.header("content-type") == "application/json")
    }

    @Test func aTimeoutSaysWhatItWaitedForAndWhatArrived() async {
        let recorder = RecordingObserver<Ping>()
        recorder.record(RequestEvent(.started(Ping()), sendID: 9))
        do {
            _ = try await recorder.terminalEvent(timeout: 0.1)
            Issue.record("expected a timeout")
        } catch let timeout as RecordingObserver<Ping>.Timeout {
            #expect(timeout.description.contains("no terminal event within 0.1 s"))
            #expect(timeout.description.contains("#9 started"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        let events = try? await recorder.events(count: 1, timeout: 0.1)
        #expect(events?.count == 1)
    }

    @Test func testsWithTheirOwnDispatchersShareNothing() async {
        await withTaskGroup(of: Bool.self) { group in
            for n in 0..<8 {
                group.addTask {
                    let stub = StubTransport()
                    stub.on(Ping.self, answer: .json(["n": .integer(Int64(n))], delay: 0.05))
                    let client = Dispatcher.stubbed(stub)
                    let recorder = RecordingObserver<Ping>()
                    recorder.observe(client)
                    _ = await client.result(Ping(n: n))
                    let events = await recorder.waitForTerminalEvents(1, timeout: 30)
                    return events.count == 2 && events.last?.response?.json["n"].int == n
                }
            }
            for await isolated in group { #expect(isolated) }
        }
    }
}

/// Waits (up to 10 s of the time the process could run, as `eventually` counts) for a condition on
/// main-actor state.
@MainActor func eventuallyOnMain(_ condition: @MainActor () -> Bool) async {
    var budget = 10 * timeScale
    var last = DispatchTime.now().uptimeNanoseconds
    while budget > 0, !condition() {
        try? await Task.sleep(nanoseconds: 10_000_000)
        let now = DispatchTime.now().uptimeNanoseconds
        budget -= min(Double(now - last) / 1e9, 0.25)
        last = now
    }
}
