import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import SwitchboardTesting
import Testing
@testable import Switchboard

/// The async interceptor chain: tokens fetched and refreshed on 401 (once for concurrent 401s, each
/// request retried once), retriers, and cancels and deadlines while an interceptor suspends.
@Suite(hangGuard, admission) struct InterceptorTests {
    /// Installs `/secure`, which answers 200 only to `Authorization: Bearer <valid>`, else 401.
    static func installSecure(on server: LoopbackServer, valid: Box<String>, seen: Box<[String]>) {
        server.route(nil, "/secure") { request in
            let header = request.header("Authorization") ?? "-"
            seen.mutate { $0.append(header) }
            return header == "Bearer \(valid.value)" ? .json(["ok": true]) : .json(["error": "expired"], status: 401)
        }
    }

    @Test(arguments: TransportUnderTest.network) func concurrent401sShareOneRefreshAndEachRequestIsRetriedOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let valid = Box("T1"), seen = Box<[String]>([]), refreshes = Box(0)
            Self.installSecure(on: server, valid: valid, seen: seen)
            let auth = AuthenticationInterceptor(token: "T0") {
                refreshes.mutate { $0 += 1 }
                // The refresh lasts until all five have had their 401 (not a guessed 100 ms).
                _ = await eventually(timeout: 20) { seen.value.filter { $0 == "Bearer T0" }.count == 5 }
                return "T1"
            }
            // Five transfers (not one shared by five identical sends): each must see the 401 itself.
            let client = makeClient(server, on: kind) {
                $0.interceptors = [auth]; $0.coalescesDuplicates = false
            }
            let responses = try await withThrowingTaskGroup(of: Response<Get>.self) { group in
                for _ in 0..<5 { group.addTask { try await client.response(for: Get("/secure")) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(responses.count == 5)
            #expect(responses.allSatisfy { $0.attempts == 2 })
            #expect(refreshes.value == 1, "one refresh for five 401s")
            #expect(seen.value.filter { $0 == "Bearer T0" }.count == 5 && seen.value.filter { $0 == "Bearer T1" }.count == 5)
            #expect(await auth.token == "T1")
        }
    }

    /// A regression: the refresh's token was set by the send that started it, once it resumed; a send
    /// that joined the refresh could resume first and retry with the token just replaced (a second 401,
    /// so a failure). The demo hit it once in about a hundred runs. Now the refresh sets the token itself.
    @Test(arguments: TransportUnderTest.network) func aSendThatJoinedTheRefreshRetriesWithTheNewToken(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let valid = Box("T1"), seen = Box<[String]>([])
            Self.installSecure(on: server, valid: valid, seen: seen)
            // Six transfers, so six sends meet the 401 and the refresh (shared, they would meet it once).
            let client = makeClient(server, on: kind) { $0.coalescesDuplicates = false }
            var failures: [String] = []
            // Under the thread sanitizer 10 rounds (20 took over a minute in a CI run beside another
            // build; 200 take 27 s without it); the race showed about once in a hundred rounds, so the
            // 200 of the plain run are where it is looked for. The suite's limit is 3 minutes for this.
            for round in 0..<(runsUnderThreadSanitizer ? 10 : 200) {
                // The refresh is a request of its own, as in an app, so joiners and the starter resume
                // in no fixed order.
                let auth = AuthenticationInterceptor(token: "T0", applies: { !($0 is Echo) }) {
                    _ = try await client.response(for: Echo())
                    return "T1"
                }
                client.updateConfiguration { $0.interceptors = [auth] }
                let results = await withTaskGroup(of: Result<Response<Get>, NetworkError>.self) { group in
                    for _ in 0..<6 { group.addTask { await client.result(Get("/secure")) } }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                for case .failure(let error) in results { failures.append("round \(round): \(error)") }
            }
            #expect(failures.isEmpty, "\(failures.count) failed: \(failures.prefix(3))")
        }
    }

    @Test(arguments: TransportUnderTest.network) func withoutATokenTheFirstRequestFetchesOne(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let valid = Box("fresh"), seen = Box<[String]>([]), refreshes = Box(0)
            Self.installSecure(on: server, valid: valid, seen: seen)
            let auth = AuthenticationInterceptor {
                refreshes.mutate { $0 += 1 }; return "fresh"
            }
            let response = try await makeClient(server, on: kind) { $0.interceptors = [auth] }.response(for: Get("/secure"))
            #expect(response.attempts == 1)
            #expect(refreshes.value == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRefusedNewTokenOrAFailedRefreshEndsWithThe401(_ kind: TransportUnderTest) async throws {
        struct LoggedOut: Error {}
        try await withServer { server in
            let valid = Box("never"), seen = Box<[String]>([])
            Self.installSecure(on: server, valid: valid, seen: seen)
            // The new token is refused too: one retry, then the 401; no loop.
            let refused = AuthenticationInterceptor(token: "T0") { "T1" }
            let first = await makeClient(server, on: kind) { $0.interceptors = [refused] }.result(Get("/secure")).failure
            #expect(first?.statusCode == 401)
            #expect(seen.value == ["Bearer T0", "Bearer T1"])
            // The refresh throws: the 401 stands, after one attempt.
            let failing = AuthenticationInterceptor(token: "T0") { throw LoggedOut() }
            let client = makeClient(server, on: kind) { $0.interceptors = [failing] }
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            let second = await client.result(Get("/secure")).failure
            guard case .unauthorized = second else {
                Issue.record("expected unauthorized, got \(String(describing: second))")
                return
            }
            #expect(log.events.last?.attempts == 1)
        }
    }

    /// An API that answers an expired token with a 403 and an error code: named by `isExpired`, it is
    /// refreshed and retried once as a 401 is; a 403 that means "forbidden", or the same 403 for an
    /// interceptor without `isExpired`, is not refreshed and ends the send with the 403; a refreshed
    /// token that still gets the expiry 403 ends it after one retry.
    @Test(arguments: TransportUnderTest.network) func anExpiryTheAppNamesIsRefreshedAsA401Is(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let valid = Box("T1"), seen = Box<[String]>([])
            server.route(nil, "/expiring") { request in
                let header = request.header("Authorization") ?? "-"
                seen.mutate { $0.append(header) }
                return header == "Bearer \(valid.value)" ? .json(["ok": true]) : .json(["error": "token_expired"], status: 403)
            }
            server.route(nil, "/forbidden") { _ in .json(["error": "forbidden"], status: 403) }
            let expired: @Sendable (NetworkError) -> Bool = {
                $0.isUnauthorized || ($0.statusCode == 403 && $0.errorResponse?.json?["error"] == "token_expired")
            }
            let refreshes = Box(0)
            let auth = AuthenticationInterceptor(token: "T0", isExpired: expired) {
                refreshes.mutate { $0 += 1 }
                return "T1"
            }
            let client = makeClient(server, on: kind) { $0.interceptors = [auth] }
            let response = try await client.response(for: Get("/expiring"))
            #expect(response.attempts == 2)
            #expect(seen.value == ["Bearer T0", "Bearer T1"])
            #expect(refreshes.value == 1)
            #expect(await auth.token == "T1")

            let forbidden = await client.result(Get("/forbidden")).failure
            #expect(forbidden?.statusCode == 403)
            #expect(refreshes.value == 1, "a 403 that is not the expiry refreshes nothing")

            // Without `isExpired`, a 403 is not an expiry.
            valid.mutate { $0 = "T2" }
            let plain = AuthenticationInterceptor(token: "T0") {
                refreshes.mutate { $0 += 1 }
                return "T2"
            }
            let plainFailure = await makeClient(server, on: kind) { $0.interceptors = [plain] }.result(Get("/expiring")).failure
            #expect(plainFailure?.statusCode == 403)
            #expect(refreshes.value == 1)

            // The new token gets the expiry too: one retry, then the 403.
            valid.mutate { $0 = "never" }
            seen.mutate { $0 = [] }
            let refused = AuthenticationInterceptor(token: "T0", isExpired: expired) { "T3" }
            let last = await makeClient(server, on: kind) { $0.interceptors = [refused] }.result(Get("/expiring")).failure
            #expect(last?.statusCode == 403)
            #expect(seen.value == ["Bearer T0", "Bearer T3"])
        }
    }

    /// An expiry named by `isExpired` follows the 401 rules: five concurrent 403s share one refresh and
    /// each is retried once; a 403 to one of the refresh's own sends fails the refresh, even when
    /// `refresh` catches it and returns a token, and the send ends with its 403 (no loop).
    @Test(arguments: TransportUnderTest.network) func namedExpiriesShareOneRefreshAndTheRefreshsOwnExpiryFailsIt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            server.route(nil, "/expiring") { request in
                let header = request.header("Authorization") ?? "-"
                seen.mutate { $0.append(header) }
                return header == "Bearer T1" ? .json(["ok": true]) : .json(["error": "token_expired"], status: 403)
            }
            let expired: @Sendable (NetworkError) -> Bool = { $0.statusCode == 403 && $0.errorResponse?.json?["error"] == "token_expired" }
            let refreshes = Box(0)
            let shared = AuthenticationInterceptor(token: "T0", isExpired: expired) {
                refreshes.mutate { $0 += 1 }
                // Lasts until all five have had their 403.
                _ = await eventually(timeout: 20) { seen.value.filter { $0 == "Bearer T0" }.count == 5 }
                return "T1"
            }
            let client = makeClient(server, on: kind) { $0.interceptors = [shared] }
            let attempts = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<5 { group.addTask { try await client.response(for: Get("/expiring?i=\(index)")).attempts } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(attempts == [2, 2, 2, 2, 2])
            #expect(refreshes.value == 1)

            // The refresh's own send (no token: it isn't adapted) gets the expiry 403.
            let refused = Box<Dispatcher?>(nil)
            let selfDefeating = AuthenticationInterceptor(token: "T0", isExpired: expired) {
                _ = try? await refused.value?.response(for: Get("/expiring?own"))
                return "T1"
            }
            let failing = makeClient(server, on: kind) { $0.interceptors = [selfDefeating] }
            refused.mutate { $0 = failing }
            seen.mutate { $0 = [] }
            let failure = await failing.result(Get("/expiring?first")).failure
            #expect(failure?.statusCode == 403, "\(String(describing: failure))")
            #expect(seen.value == ["Bearer T0", "-"], "the send, then the refresh's own; no retry with the refused refresh's token")
        }
    }

    /// An interceptor that suspends in `adapt` until released (or cancelled), and retries a 503 after
    /// a short wait.
    struct Suspending: RequestInterceptor {
        let release: Box<Bool>
        /// How many times `adapt` was entered: what a test waits for before it cancels.
        var entered = Box(0)
        func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest {
            entered.mutate { $0 += 1 }
            while !release.value {
                try await Task.sleep(nanoseconds: 5_000_000)
            }
            return request
        }
        func retry(_ context: RetryContext) async -> RetryDecision {
            context.error.statusCode == 503 && context.attempt < 3 ? .retryAfter(0.01) : .doNotRetry
        }
    }

    @Test(arguments: TransportUnderTest.network) func aCancelOrADeadlineWhileAnInterceptorSuspendsEndsTheSend(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let suspending = Suspending(release: Box(false))
            let client = makeClient(server, on: kind) { $0.interceptors = [suspending] }
            let result = Box<Result<Response<Get>, NetworkError>?>(nil)
            let handle = client.send(Get("/echo")) { value in result.mutate { $0 = value } }
            #expect(await eventually(timeout: 20) { suspending.entered.value == 1 }, "the interceptor is suspended in adapt")
            handle.cancel()
            #expect(await eventually(timeout: 20) { result.value != nil })
            #expect(result.value?.failure?.isCancelled == true)
            let timedOut = await client.result(Get("/echo").with(\.timeout, 0.3)).failure
            guard case .timedOut = timedOut else {
                Issue.record("expected timedOut, got \(String(describing: timedOut))")
                return
            }
            #expect(server.totalRequests == 0)
        }
    }

    /// Interceptors decide about at most 16 attempts: one that always says retry stops there (the
    /// policy, `.none`, then ends the send); a retry policy that asks for more attempts than that gets
    /// them all, the policy deciding alone after the 16th.
    @Test(arguments: TransportUnderTest.network) func interceptorsDecideAboutSixteenAttemptsAndAPolicyMayAskForMore(_ kind: TransportUnderTest) async throws {
        struct AlwaysRetry: RequestInterceptor {
            let asked = Box(0)
            func retry(_ context: RetryContext) async -> RetryDecision {
                asked.mutate { $0 += 1 }
                return .retry
            }
        }
        try await withServer { server in
            let eager = AlwaysRetry()
            let capped = makeClient(server, on: kind) { $0.interceptors = [eager] }
            let first = await capped.result(Get("/status/503?capped"))
            #expect(first.failure?.statusCode == 503)
            #expect(server.hits("/status/503") == 16, "16 attempts, whatever the interceptor says")
            #expect(eager.asked.value == 15, "asked after each attempt but the 16th")

            let patient = AlwaysRetry()
            let policy = RetryPolicy(maximumAttempts: 20, initialDelay: 0, jitter: 0)
            let longer = makeClient(server, on: kind) {
                $0.interceptors = [patient]
                $0.retryPolicy = policy
            }
            let second = await longer.result(Get("/status/503?longer"))
            #expect(second.failure?.statusCode == 503)
            #expect(server.hits("/status/503") == 16 + 20, "the policy's 20 attempts")
            #expect(patient.asked.value == 15)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRetrierDecidesBeforeThePolicy(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.interceptors = [Suspending(release: Box(true))] }
            let response = await client.result(Get("/status/503"))
            #expect(response.failure?.statusCode == 503)
            #expect(server.hits("/status/503") == 3, "retried twice by the interceptor, though the policy is .none")
        }
    }
}

/// Interceptors that never finish can't hold a send past its deadline or a cancel.
@Suite(hangGuard, admission) struct InterceptorBoundsTests {
    /// Retries by sleeping until cancelled, then says retry.
    struct Stubborn: RequestInterceptor {
        /// How many decisions were asked for: what a test waits for before it cancels.
        var entered = Box(0)
        func retry(_ context: RetryContext) async -> RetryDecision {
            entered.mutate { $0 += 1 }
            while !Task.isCancelled { try? await Task.sleep(nanoseconds: 5_000_000) }
            return .retry
        }
    }

    @Test func aRetryDecisionThatNeverComesEndsAtTheDeadlineWithTheAttemptsOutcome() async throws {
        // A stub transport answers at once, so only the interceptor's decision can take time.
        let transport = StubTransport { _ in .status(503) }
        let client = Dispatcher(
            configuration: Configuration {
                $0.baseURL = URL(string: "http://127.0.0.1:9")
                $0.callbackQueue = .immediate
                $0.interceptors = [Stubborn()]
            }, transport: transport)
        let started = Date()
        // A deadline long enough for the transfer to run on a loaded machine (the stub answers at once,
        // but the interceptors' task waits for a thread of Swift's pool: the suite's start, beside
        // another build, kept it from running for over 10 s in one CI run); the decision never comes,
        // so the deadline ends the send with the attempt's outcome.
        let deadline = 30 * timeScale
        let ended = Box<Date?>(nil)
        let error = await completion { (done: @escaping @Sendable (NetworkError?) -> Void) in
            client.send(Get("/busy").with(\.timeout, deadline)) { result in
                ended.mutate { $0 = Date() }
                done(result.failure)
            }
        }
        #expect(transport.requests.count == 1)
        #expect(error?.statusCode == 503, "the attempt's outcome stands: \(String(describing: error))")
        // When the completion ran (not when this task resumed). Not before the deadline; after it, by
        // no more than the CPU starvation of a loaded two-core machine (the compilers of the
        // type-check suites, or another build beside the suite: over 15 s late in one CI run), far
        // below the never that a waiting send would be.
        let took = (ended.value ?? .distantFuture).timeIntervalSince(started)
        #expect(took >= deadline - 0.05 && took < deadline + 30 * timeScale, "ended by the deadline: \(took) s")
    }

    @Test(arguments: TransportUnderTest.network) func aCancelWhileInterceptorsDecideEndsTheSendAtOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let stubborn = Stubborn()
            let client = makeClient(server, on: kind) { $0.interceptors = [stubborn] }
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            let handle = client.send(Get("/status/503").with(\.timeout, 300))
            #expect(await eventually(timeout: 20) { stubborn.entered.value == 1 }, "the interceptor is deciding")
            handle.cancel()
            #expect(await eventually(timeout: 20) { log.events.last?.isTerminal == true })
            #expect(log.events.last.map { Listener.name($0) } == "cancelled")
            #expect(log.events.last?.attempts == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aCancelBeforeAnyTransferReportsNoAttempts(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let suspending = InterceptorTests.Suspending(release: Box(false))
            let client = makeClient(server, on: kind) { $0.interceptors = [suspending] }
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            let handle = client.send(Get("/echo"))
            #expect(await eventually(timeout: 20) { suspending.entered.value == 1 }, "the interceptor is suspended in adapt")
            handle.cancel()
            #expect(await eventually(timeout: 20) { log.events.last?.isTerminal == true })
            #expect(log.events.last?.attempts == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRefreshThatHangsEndsWithThe401AfterItsTimeout(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let valid = Box("T1"), seen = Box<[String]>([])
            InterceptorTests.installSecure(on: server, valid: valid, seen: seen)
            let auth = AuthenticationInterceptor(token: "T0", refreshTimeout: 0.2) {
                try await Task.sleep(nanoseconds: 3_600_000_000_000)  // an hour: it never answers here
                return "T1"
            }
            let started = Date()
            let error = await makeClient(server, on: kind) { $0.interceptors = [auth] }.result(Get("/secure")).failure
            #expect(error?.statusCode == 401)
            #expect(Date().timeIntervalSince(started) < 45 * timeScale)  // the refresh timeout ended it, not the hour
        }
    }
}
