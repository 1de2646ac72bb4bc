import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import LoopbackServer
@testable import Switchboard

/// The observer API under Swift 6 data-race checking: what must not compile, what must compile
/// cleanly, and where callbacks run.
// Serialized: each check runs the compiler, and eight at once would starve the rest of the suite.
@Suite(.serialized, hangGuard, admission) struct ObserverSoundnessTests {
    /// Declarations every snippet shares: a request, a main-actor view model, a plain class with a
    /// mutable counter, a thread-safe class and an actor.
    static let prelude = """
        import Dispatch
        import Switchboard

        struct Ping: Request { var path: String { "/ping" } }
        @MainActor final class ViewModel {
            var count = 0
            func changed(_ event: RequestEvent<Ping>) { count += 1 }
        }
        final class Plain {
            var count = 0
            func changed(_ event: RequestEvent<Ping>) { count += 1 }
        }
        final class Metrics: Sendable {
            func changed(_ event: RequestEvent<Ping>) {}
        }
        actor Store {
            var count = 0
            nonisolated func changed(_ event: RequestEvent<Ping>) { Task { await self.bump() } }
            func bump() { count += 1 }
        }
        let bg = DispatchQueue(label: "bg")

        """

    /// Registrations that would let a data race through; each must be a compile error, and the error
    /// must say why (`expect`: a fragment of the diagnostic), so a typo can't pass for a rejection.
    static let mustNotCompile: [(name: String, expect: String, code: String)] = [
        // No form delivers a method reference anywhere but on the main actor.
        (
            "main-actor method reference delivered on a background queue", "extra argument 'on'",
            """
            @MainActor func f(vm: ViewModel) {
                Dispatcher.shared.addObserver(vm, for: Ping.self, on: .queue(bg), calling: ViewModel.changed)
            }
            """
        ),
        (
            "non-Sendable observer's method on a background queue", "extra argument 'on'",
            """
            func f(plain: Plain) {
                Dispatcher.shared.addObserver(plain, for: Ping.self, on: .queue(bg), calling: Plain.changed)
            }
            """
        ),
        (
            "non-Sendable observer in a closure on a background queue", "'Sendable'",
            """
            func f(plain: Plain) {
                Dispatcher.shared.addObserver(plain, for: Ping.self, on: .queue(bg)) { plain, _ in plain.count += 1 }
            }
            """
        ),
        (
            "non-Sendable observer delivered immediately", "'Sendable'",
            """
            func f(plain: Plain) {
                Dispatcher.shared.addObserver(plain, for: Ping.self, on: .immediate) { plain, _ in plain.count += 1 }
            }
            """
        ),
        (
            "main-actor closure on a background queue", "Sendable closure",
            """
            @MainActor func f(vm: ViewModel) {
                Dispatcher.shared.addObserver(vm, for: Ping.self, on: .queue(bg)) { vm, _ in vm.count += 1 }
            }
            """
        ),
        (
            "non-Sendable observer registered off the main actor", "main actor-isolated",
            """
            func f(plain: Plain) {
                Dispatcher.shared.addObserver(plain, for: Ping.self, calling: Plain.changed)
            }
            """
        ),
        (
            "closure formed in main-actor code, touching main-actor state, on another queue", "Sendable closure",
            """
            @MainActor final class Screen {
                var shown = 0
                func register(metrics: Metrics) {
                    Dispatcher.shared.addObserver(metrics, for: Ping.self, on: .queue(bg)) { _, _ in self.shown += 1 }
                }
            }
            """
        ),
    ]

    /// What users write; it must compile without a warning.
    static let mustCompile = """
        @MainActor final class ProfileScreen {
            var names: [String] = []
            init() {
                Dispatcher.shared.addObserver(self, for: Ping.self, calling: ProfileScreen.changed)
                Dispatcher.shared.addObserver(self, for: Ping.self) { screen, event in screen.names.append("\\(event.sendID)") }
            }
            func changed(_ event: RequestEvent<Ping>) {
                if case .succeeded(let response) = event.kind { names.append(response.json["name"].string ?? "") }
            }
        }
        @MainActor func fromMainActor(plain: Plain, metrics: Metrics, store: Store) {
            Dispatcher.shared.addObserver(plain, for: Ping.self, calling: Plain.changed)
            Dispatcher.shared.addObserver(plain, for: Ping.self) { plain, _ in plain.count += 1 }
            Dispatcher.shared.addObserver(metrics, for: Ping.self, on: .queue(bg)) { metrics, event in metrics.changed(event) }
            Dispatcher.shared.addObserver(store, for: Ping.self, on: .immediate) { store, event in store.changed(event) }
        }
        func fromAnywhere(vm: ViewModel, metrics: Metrics) {
            Dispatcher.shared.addObserver(vm, for: Ping.self, calling: ViewModel.changed)
            Dispatcher.shared.addObserver(metrics, for: Ping.self, on: .main) { metrics, event in metrics.changed(event) }
        }
        func fromAsync(plain: Plain) async {
            await Dispatcher.shared.addObserver(Plain(), for: Ping.self, calling: Plain.changed)
        }
        """

    /// What the compiler accepts doesn't change under a sanitizer; there the type-checks would only
    /// take a core from the other tests for half a minute.
    static let typeChecks = Testing.ConditionTrait.enabled(if: !(runsUnderThreadSanitizer || runsUnderAddressSanitizer), "compile-time checks: the same without a sanitizer")

    @Test(typeChecks, arguments: mustNotCompile.map(\.name))
    func unsafeRegistrationsDoNotCompile(name: String) async throws {
        let snippet = try #require(Self.mustNotCompile.first { $0.name == name })
        let outcome = try await TypeChecker.check(Self.prelude + snippet.code)
        #expect(outcome.status != 0, "compiled, but must not: \(name)")
        #expect(outcome.errors.contains { $0.contains(snippet.expect) }, "\(name): expected an error with \(snippet.expect.debugDescription), got \(outcome.errors)")
        // Only the registration is wrong: no error points into the prelude.
        let preludeLines = Self.prelude.split(separator: "\n", omittingEmptySubsequences: false).count
        let lines = outcome.errors.compactMap { $0.split(separator: ":").dropFirst().first.flatMap { Int($0) } }
        #expect(!lines.isEmpty, "no error named its line: \(outcome.errors)")
        #expect(lines.allSatisfy { $0 >= preludeLines }, "errors in the prelude: \(outcome.errors)")
    }

    @Test(typeChecks) func theDocumentedFormsCompileWithoutWarnings() async throws {
        let outcome = try await TypeChecker.check(Self.prelude + Self.mustCompile)
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(outcome.warnings.isEmpty, "\(outcome.warnings)")
    }

    @Test func aMainActorObserverRegisteredFromElsewhereRunsOnTheMainActor() async throws {
        try await withServer { server in
            let client = makeClient(server)
            let model = MainActorListener()
            // A nonisolated context: the main-actor form is chosen, and delivery is on the main actor
            // (`MainActorListener.heard` asserts its isolation).
            client.addObserver(model, for: Ping.self, calling: MainActorListener.heard)
            _ = try await client.response(for: Ping())
            #expect(await eventually { await model.events == ["started", "succeeded"] })
        }
    }

    @Test @MainActor func aPlainObjectRegisteredFromTheMainActorStaysOnIt() async throws {
        final class Counter {
            let onMain = Box<[Bool]>([])
            func changed(_ event: RequestEvent<Ping>) { onMain.mutate { $0.append(DispatchQueue.getSpecific(key: mainKey) == "main") } }
        }
        DispatchQueue.main.setSpecific(key: mainKey, value: "main")
        let server = try LoopbackServer.standard()
        let client = Dispatcher(configuration: Configuration { $0.baseURL = server.baseURL })
        let counter = Counter()
        client.addObserver(counter, for: Ping.self, calling: Counter.changed)
        let response = try await client.response(for: Ping())
        #expect(response.statusCode == 200)
        let log = counter.onMain
        #expect(await eventually { log.value.count == 2 })
        #expect(log.value == [true, true])
        await stopOffPool(server)
    }
}

private let mainKey = DispatchSpecificKey<String>()

/// Module-qualified names: an app with its own `Request`, `Response`, `JSON` and `Configuration`
/// still names Switchboard's.
@Suite(ObserverSoundnessTests.typeChecks, hangGuard, admission) struct QualifiedNameTests {
    @Test func switchboardsTypesQualifyInAnAppWithTypesOfTheSameNames() async throws {
        let outcome = try await TypeChecker.check(
            """
            import Switchboard

            struct Request {}
            struct Response {}
            enum JSON {}
            struct Configuration {}
            final class Dispatcher {}

            struct GetUser: Switchboard.Request {
                var path: String { "/user" }
            }
            func use(_ response: Switchboard.Response<GetUser>, _ json: Switchboard.JSON, _ error: Switchboard.NetworkError) -> Switchboard.Configuration {
                _ = (Request(), Response(), Configuration(), Dispatcher())
                return Switchboard.Configuration { $0.timeout = 5 }
            }
            func send() {
                let client = Switchboard.Dispatcher(configuration: Switchboard.Configuration())
                client.send(GetUser())
                Switchboard.Dispatcher.shared.send(GetUser()) { (result: Result<Switchboard.Response<GetUser>, Switchboard.NetworkError>) in _ = result }
            }
            """)
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(outcome.warnings.isEmpty, "\(outcome.warnings)")
    }
}
