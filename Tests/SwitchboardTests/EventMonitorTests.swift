import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// Records every monitor call of every send, with the send's context.
final class CallRecorder: EventMonitor {
    let calls = Box<[String]>([])
    let contexts = Box<[ObjectIdentifier]>([])
    let adapted = Box<[URLRequest]>([])
    let name: String
    init(_ name: String = "") { self.name = name }

    private func note(_ send: SendContext, _ text: String) {
        contexts.mutate { $0.append(ObjectIdentifier(send)) }
        calls.mutate { $0.append(name + text) }
    }

    func requestDidStart(_ send: SendContext) { note(send, "start") }
    func request(_ send: SendContext, didAdapt urlRequest: URLRequest, attempt: Int) {
        adapted.mutate { $0.append(urlRequest) }
        note(send, "adapt\(attempt)")
    }
    func request(_ send: SendContext, didReceive result: Result<TransportResponse, NetworkError>, attempt: Int) {
        let status = (try? result.get().httpResponse.statusCode).map(String.init) ?? "error"
        note(send, "receive\(attempt):\(status)")
    }
    func request(_ send: SendContext, didDecode result: Result<ResponseContext, NetworkError>, attempt: Int) {
        note(send, "decode\(attempt):" + ((try? result.get()) == nil ? "error" : "ok"))
    }
    func request(_ send: SendContext, willRetry attempt: Int, after delay: TimeInterval, because error: NetworkError) {
        note(send, "retry\(attempt)")
    }
    func request(_ send: SendContext, didFinish result: Result<ResponseContext, NetworkError>) {
        switch result {
        case .success(let response): note(send, "finish:\(response.httpResponse.statusCode)")
        case .failure(.cancelled): note(send, "finish:cancelled")
        case .failure: note(send, "finish:error")
        }
    }
    func requestWillDeliver(_ send: SendContext, error: NetworkError?) { note(send, "willDeliver") }
    func requestDidDeliver(_ send: SendContext, error: NetworkError?) { note(send, "didDeliver") }
}

/// One protocol follows a send through its life; logging and accessories are monitors like any other.
@Suite(hangGuard, admission) struct EventMonitorTests {
    @Test(arguments: TransportUnderTest.network) func aSuccessfulSendIsFollowedStepByStepWithOneContext(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let monitor = CallRecorder()
            let client = makeClient(server, on: kind) { $0.monitors = [monitor] }
            let response = try await client.response(for: Get("/echo").with(\.headers, ["X-Trace": "1"]))
            // didDeliver comes after the send's own completion, which resumed this task: wait for it.
            #expect(await eventually { monitor.calls.value.last == "didDeliver" })
            #expect(monitor.calls.value == ["start", "adapt1", "receive1:200", "decode1:ok", "finish:200", "willDeliver", "didDeliver"])
            #expect(Set(monitor.contexts.value).count == 1, "the same context for every call of one send")
            #expect(monitor.adapted.value.first?.value(forHTTPHeaderField: "X-Trace") == "1", "didAdapt sees the request as it leaves")
            #expect(response.sendID != 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func retriesAreReportedPerAttempt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let monitor = CallRecorder()
            let client = makeClient(server, on: kind) { $0.monitors = [monitor] }
            let request = Get("/flaky/monitor-\(UUID().uuidString)?failures=1")
                .with(\.pipeline.retryPolicy, RetryPolicy(maximumAttempts: 2, initialDelay: 0.01, jitter: 0))
            _ = try await client.response(for: request)
            #expect(await eventually { monitor.calls.value.last == "didDeliver" })
            #expect(
                monitor.calls.value == [
                    "start", "adapt1", "receive1:503", "decode1:error", "retry2", "adapt2", "receive2:200", "decode2:ok", "finish:200", "willDeliver", "didDeliver",
                ])
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancelledAndUnbuildableSendsStillStartFinishAndDeliver(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let cancelled = CallRecorder()
            let handle = makeClient(server, on: kind) { $0.monitors = [cancelled] }.send(Get("/delay/60000"))
            #expect(await eventually { cancelled.calls.value.contains("adapt1") })
            handle.cancel()
            #expect(await eventually { cancelled.calls.value.last == "didDeliver" })
            #expect(cancelled.calls.value == ["start", "adapt1", "finish:cancelled", "willDeliver", "didDeliver"])

            let invalid = CallRecorder()
            _ = await makeClient(server, on: kind) { $0.monitors = [invalid] }.result(Get("/echo").with(\.headers, ["Bad\nName": "x"]))
            #expect(invalid.calls.value == ["start", "finish:error", "willDeliver", "didDeliver"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func theConfigurationsMonitorsComeFirstThenTheRequests(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let shared = CallRecorder()
            let order = Box<[String]>([])
            struct Tagging: EventMonitor {
                let tag: String
                let order: Box<[String]>
                func requestDidStart(_ send: SendContext) { order.mutate { $0.append(tag) } }
            }
            let client = makeClient(server, on: kind) { $0.monitors = [Tagging(tag: "configuration", order: order), shared] }
            _ = try await client.response(for: Get("/echo").with(\.pipeline.monitors, [Tagging(tag: "request", order: order)]))
            #expect(order.value == ["configuration", "request"])
            #expect(shared.calls.value.first == "start")
        }
    }

    @Test(arguments: TransportUnderTest.network) func deliveryCallsRunOnTheCallbackQueueAroundObservers(_ kind: TransportUnderTest) async throws {
        let key = DispatchSpecificKey<Bool>()
        let queue = DispatchQueue(label: "monitor-callbacks")
        queue.setSpecific(key: key, value: true)
        try await withServer { server in
            let steps = Box<[String]>([])
            struct QueueCheck: EventMonitor {
                let key: DispatchSpecificKey<Bool>
                let steps: Box<[String]>
                func requestWillDeliver(_ send: SendContext, error: NetworkError?) {
                    steps.mutate { $0.append("will:" + (DispatchQueue.getSpecific(key: key) == true ? "cb" : "other")) }
                }
                func requestDidDeliver(_ send: SendContext, error: NetworkError?) {
                    steps.mutate { $0.append("did:" + (DispatchQueue.getSpecific(key: key) == true ? "cb" : "other")) }
                }
            }
            let client = makeClient(server, on: kind) {
                $0.callbackQueue = .queue(queue); $0.monitors = [QueueCheck(key: key, steps: steps)]
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                client.send(Ping()) { _ in
                    steps.mutate { $0.append("closure") }
                    continuation.resume()
                }
            }
            await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
            #expect(steps.value == ["will:cb", "closure", "did:cb"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func loggingIsAMonitorThatRunsBeforeTheConfiguredOnes(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let logger = CapturingLogger()
            let order = Box<[String]>([])
            struct AfterLog: EventMonitor {
                let logger: CapturingLogger
                let order: Box<[String]>
                func request(_ send: SendContext, didFinish result: Result<ResponseContext, NetworkError>) {
                    order.mutate { $0.append("monitor saw \(logger.records.value.count) lines") }
                }
            }
            let client = makeClient(server, on: kind) {
                $0.logMode = .debug; $0.logger = logger; $0.monitors = [AfterLog(logger: logger, order: order)]
            }
            _ = try await client.response(for: Get("/echo"))
            #expect(order.value == ["monitor saw 2 lines"], "the request line and the result line came first")
        }
    }
}
