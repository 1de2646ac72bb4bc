import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import SwitchboardTesting
import Testing

/// The helpers app developers use to test their observers without a network.
@Suite(timeLimit(minutes: 1)) struct SwitchboardTestingTests {
    func client(_ stub: StubTransport) -> Dispatcher {
        Dispatcher(configuration: Configuration { $0.baseURL = URL(string: "https://api.test"); $0.callbackQueue = .immediate }, transport: stub)
    }

    @Test func stubAnswersAndRecordingObserverSeesEveryEvent() async {
        let stub = StubTransport { request in
            request.url?.path == "/echo" ? .json(["user": ["name": "Ada"]]) : .status(404)
        }
        let sb = client(stub)
        let recorder = RecordingObserver<Ping>()
        recorder.observe(sb)
        sb.send(Ping())
        let events = await recorder.waitForTerminalEvents(1)
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
        let events = await recorder.waitForTerminalEvents(1)
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
