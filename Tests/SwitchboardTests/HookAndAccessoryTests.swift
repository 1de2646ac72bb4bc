import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// Records the order of accessory calls and observer/closure deliveries.
final class OrderRecorder: RequestAccessory, ResponseHook {
    let steps = Box<[String]>([])
    let key: DispatchSpecificKey<String>?
    /// A log shared with other recorders, where each step is written as `name:step`.
    let shared: (log: Box<[String]>, name: String)?

    init(key: DispatchSpecificKey<String>? = nil, sharing log: Box<[String]>? = nil, as name: String = "") {
        self.key = key
        self.shared = log.map { ($0, name) }
    }

    private func record(_ step: String) {
        let queue = key.flatMap { DispatchQueue.getSpecific(key: $0) }.map { "@" + $0 } ?? ""
        steps.mutate { $0.append(step + queue) }
        if let shared { shared.log.mutate { $0.append(shared.name + ":" + step) } }
    }

    func willStart(_ request: any Request) { record("willStart") }
    func willStop(_ request: any Request, error: NetworkError?) { record("willStop") }
    func didStop(_ request: any Request, error: NetworkError?) { record(error == nil ? "didStop" : "didStop(error)") }
    func didSucceed(_ response: ResponseContext) throws(NetworkError) { record("hook") }
    func note(_ step: String) { record(step) }
}

@Suite(hangGuard, admission) struct HookAndAccessoryTests {
    @Test(arguments: TransportUnderTest.network) func bodyLevelErrorCodeBecomesATypedFailureKeepingCodeAndMessage(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.responseHooks = [APIErrorCodeHook()] }
            let error = await client.result(Get("/body-error")).failure
            let api = error?.apiError
            #expect(api?.intCode == 3)
            #expect(api?.message == "session expired")
            #expect(api?.response.statusCode == 200)
            #expect(error?.description == "API error 3: session expired")
            // errorCode 0 is success; a body without the key passes.
            let list = try await client.response(for: Get("/api.php?type=List"))
            #expect(list.json["errorCode"] == 0)
            _ = try await client.response(for: Get("/users/1"))
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRequestCanOptOutOfTheConfigurationsHooks(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.responseHooks = [APIErrorCodeHook()] }
            let response = try await client.response(for: Get("/body-error").with(\.pipeline.usesConfigurationResponseHooks, false))
            #expect(response.json["errorCode"] == 3)
        }
    }

    @Test(arguments: TransportUnderTest.network) func failureHooksMapErrorsInOrder(_ kind: TransportUnderTest) async throws {
        struct SessionExpired: ResponseHook {
            func didFail(_ error: NetworkError, for request: any Request) -> NetworkError {
                error.statusCode == 401 ? .invalidRequest(reason: "log in again") : error
            }
        }
        struct Suffix: ResponseHook {
            func didFail(_ error: NetworkError, for request: any Request) -> NetworkError {
                if case .invalidRequest(let reason) = error { return .invalidRequest(reason: reason + " (mapped)") }
                return error
            }
        }
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.responseHooks = [SessionExpired()] }
            let error = await client.result(Get("/unauthorized-no-challenge").with(\.pipeline.responseHooks, [Suffix()])).failure
            #expect(error?.invalidReason == "log in again (mapped)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func orderIsHookWillStopObserversClosureDidStopOnTheCallbackQueue(_ kind: TransportUnderTest) async throws {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "callbacks")
        queue.setSpecific(key: key, value: "cb")
        try await withServer { server in
            let recorder = OrderRecorder(key: key)
            let client = makeClient(server, on: kind) {
                $0.callbackQueue = .queue(queue)
                $0.monitors = [recorder]
                $0.responseHooks = [recorder]
            }
            let listener = Listener()
            client.addObserver(listener, for: Ping.self, on: .queue(queue)) { _, event in recorder.note("observer:" + Listener.name(event)) }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                client.send(Ping()) { _ in
                    recorder.note("closure")
                    continuation.resume()
                }
            }
            await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
            // On the callback queue, in this order; the hook runs off it, after `started` was queued
            // and before `willStop` (where it lands against the queued `started` is a race).
            let steps = recorder.steps.value
            #expect(steps.filter { $0 != "hook" } == ["willStart", "observer:started@cb", "willStop@cb", "observer:succeeded@cb", "closure@cb", "didStop@cb"], "\(steps)")
            let hook = try #require(steps.firstIndex(of: "hook"), "\(steps)")
            #expect(steps.filter { $0 == "hook" }.count == 1)
            #expect(hook > 0 && hook < (steps.firstIndex(of: "willStop@cb") ?? 0), "\(steps)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func accessoriesSeeFailuresAndCancellationsToo(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let recorder = OrderRecorder()
            let client = makeClient(server, on: kind) { $0.monitors = [recorder] }
            _ = await client.result(Get("/status/500"))
            #expect(await eventually { recorder.steps.value.count == 3 })
            #expect(recorder.steps.value == ["willStart", "willStop", "didStop(error)"])
            let cancelled = OrderRecorder()
            let handle = makeClient(server, on: kind) { $0.monitors = [cancelled] }.send(Get("/delay/60000"))
            handle.cancel()
            #expect(await eventually { cancelled.steps.value.count == 3 })
            #expect(cancelled.steps.value == ["willStart", "willStop", "didStop(error)"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func perRequestAccessoriesRunAfterTheConfigurations(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let log = Box<[String]>([])
            let global = OrderRecorder(sharing: log, as: "global"), local = OrderRecorder(sharing: log, as: "local")
            let client = makeClient(server, on: kind) { $0.monitors = [global] }
            _ = try await client.response(for: Get("/echo").with(\.pipeline.monitors, [local]))
            // didStop follows the completion that resumed this task, on the callback queue: wait for it.
            #expect(await eventually { log.value.count == 6 })
            // At each step the configuration's accessory runs first, then the request's own.
            #expect(log.value == ["global:willStart", "local:willStart", "global:willStop", "local:willStop", "global:didStop", "local:didStop"])
        }
    }
}
