import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import SwitchboardTesting
import Testing
@testable import Switchboard

/// Configuration that can't race: an atomic update that runs no user code under a lock, and transport
/// settings that apply after the first send.
@Suite(hangGuard, admission) struct ConfigurationUpdateTests {
    @Test func anUpdateMayReadTheConfigurationItChanges() async {
        let client = Dispatcher()
        // It used to run under the dispatcher's lock, so reading `configuration` inside it deadlocked.
        let done = await runDetached(timeout: 5) {
            client.updateConfiguration { $0.timeout = client.configuration.timeout * 2 }
        }
        #expect(done)
        #expect(client.configuration.timeout == 120)
    }

    /// (An update from inside the closure is refused by design: it stops the program with a message,
    /// as documented on `updateConfiguration`.)
    @Test(arguments: TransportUnderTest.network) func anUpdateMaySendFromInsideItsClosureWithTheConfigurationOfBefore(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.defaultHeaders["X-Before"] = "1" }
            let echoed = Box<Result<Response<Get>, NetworkError>?>(nil)
            let done = await runDetached(timeout: 5) {
                client.updateConfiguration { configuration in
                    configuration.defaultHeaders = ["X-Outer": "1"]
                    client.send(Get("/echo")) { result in echoed.mutate { $0 = result } }
                }
            }
            #expect(done)
            #expect(client.configuration.defaultHeaders["X-Outer"] == "1")
            #expect(await eventually(timeout: 30) { echoed.value != nil })
            // The send inside the closure went out with the configuration the update had not yet replaced.
            let headers = try #require(try echoed.value?.get()).json["headers"]
            #expect(headers["X-Before"].string == "1")
            #expect(headers["X-Outer"].isNull)
            #expect(server.hits("/echo") == 1)
        }
    }

    @Test func concurrentUpdatesLoseNothing() async {
        let client = Dispatcher()
        let writers = 8, each = 150
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for n in 0..<each {
                        client.updateConfiguration { $0.defaultHeaders["X-\(writer)-\(n)"] = "v" }
                    }
                }
            }
        }
        #expect(client.configuration.defaultHeaders.count == writers * each)
    }

    @Test(arguments: TransportUnderTest.network) func transportSettingsChangedAfterTheFirstSendApply(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            _ = try await client.response(for: Get("/set-cookie"))
            let before = try await client.response(for: Echo())
            #expect(before.json["headers"]["Cookie"] == "session=abc")
            client.updateConfiguration { $0.cookies = .none }
            let after = try await client.response(for: Echo())
            #expect(after.json["headers"]["Cookie"].isNull, "a new session without cookies: \(after.json["headers"])")
            // The in-memory jar belongs to the dispatcher: turning cookies back on finds it again.
            client.updateConfiguration { $0.cookies = .inMemory }
            let again = try await client.response(for: Echo())
            #expect(again.json["headers"]["Cookie"] == "session=abc")
        }
    }

    /// The idle timeout is not a transport setting: a change reaches the next send on the transport
    /// already made (the libcurl transport once kept the value it was created with).
    @Test(arguments: TransportUnderTest.network) func anIdleTimeoutChangedAfterTheFirstSendApplies(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.transport = kind.factory }
            _ = try await client.response(for: Echo())
            client.updateConfiguration { $0.idleTimeout = 1 }
            let started = Date()
            let result = await client.result(Get("/delay/30000"))
            guard case .failure(.idleTimeout(let after)) = result else {
                Issue.record("expected an idle timeout, got \(result)")
                return
            }
            #expect(after == 1)
            #expect(Date().timeIntervalSince(started) < 20 * timeScale)
        }
    }

    @Test func theTransportComesFromTheConfigurationsFactoryMadeOncePerSettings() async throws {
        try await withServer { server in
            let made = Box(0)
            let jars = Box<[ObjectIdentifier]>([])
            let counting = TransportFactory(name: "counting") { context in
                made.mutate { $0 += 1 }
                if let jar = context.cookieJar { jars.mutate { $0.append(ObjectIdentifier(jar)) } }
                return URLSessionTransport(configuration: context.configuration)
            }
            let client = Dispatcher(
                configuration: Configuration {
                    $0.baseURL = server.baseURL; $0.transport = counting
                })
            for _ in 0..<3 { _ = try await client.response(for: Echo()) }
            #expect(made.value == 1, "one transport for three sends")
            client.updateConfiguration { $0.timeout = 9 }  // not a transport setting
            _ = try await client.response(for: Echo())
            #expect(made.value == 1)
            client.updateConfiguration { $0.maximumConnectionsPerHost = 3 }
            _ = try await client.response(for: Echo())
            #expect(made.value == 2, "a transport setting changed: a new transport")
            #expect(Set(jars.value).count == 1, "every transport gets the dispatcher's one in-memory jar")

            // Another factory: later sends go through it, and never reach the server.
            let stub = StubTransport { _ in .json(["from": "stub"]) }
            client.updateConfiguration { $0.transport = .using(stub) }
            let stubbed = try await client.response(for: Echo())
            #expect(stubbed.json["from"] == "stub")
            #expect(stub.requests.count == 1)
            client.updateConfiguration { $0.transport = .urlSession }
            let real = try await client.response(for: Echo())
            #expect(real.json["from"].isNull && !real.json["headers"].isNull)
        }
    }

    @Test func aTransportOfYourOwnIsWarnedAboutInsteadOfIgnoredSilently() async throws {
        try await withServer { server in
            let logger = CapturingLogger()
            let client = Dispatcher(
                configuration: Configuration {
                    $0.baseURL = server.baseURL; $0.logger = logger
                }, transport: URLSessionTransport())
            _ = try await client.response(for: Echo())
            client.updateConfiguration { $0.maximumConnectionsPerHost = 2 }
            #expect(logger.text.contains("transport settings changed"))
            client.updateConfiguration { $0.timeout = 5 }  // not a transport setting: no second warning
            #expect(logger.records.value.count == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func eachSendUsesTheConfigurationAsItWasWhenSent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            // The first send is on the wire (the server has its header) before the update, and is held
            // until the second, sent after the update, has arrived too.
            let seen = Box<[String]>([])
            let bothIn = RequestGate(opensAt: 2)
            server.route(nil, "/held-echo") { request in
                seen.mutate { $0.append(request.header("X-Version") ?? "-") }
                bothIn.pass(request, timeout: 20)
                return .json(["ok": true])
            }
            let client = makeClient(server, on: kind) { $0.defaultHeaders = ["X-Version": "1"] }
            async let first = client.response(for: Get("/held-echo"))
            #expect(await eventually(timeout: 20) { seen.value.count == 1 })
            client.updateConfiguration { $0.defaultHeaders = ["X-Version": "2"] }
            _ = try await client.response(for: Get("/held-echo"))
            _ = try await first
            #expect(seen.value == ["1", "2"])
        }
    }
}

/// Runs `work` on a thread of its own; returns whether it finished within `timeout` seconds (a
/// deadlock shows as `false` instead of hanging the suite).
func runDetached(timeout: TimeInterval, _ work: @escaping @Sendable () -> Void) async -> Bool {
    let finished = Box(false)
    Thread.detachNewThread {
        work()
        finished.mutate { $0 = true }
    }
    return await eventually(timeout: timeout) { finished.value }
}
