import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

@Suite(hangGuard, admission) struct RetryTests {
    static let fast = RetryPolicy(maximumAttempts: 3, initialDelay: 0.01, maximumDelay: 0.05)

    @Test(arguments: TransportUnderTest.network) func aFlakyGETSucceedsOnAttempt3WithOneTerminalEvent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.retryPolicy = Self.fast }
            let listener = Listener()
            client.addObserver(listener, for: Get.self, on: .immediate) { l, event in l.log.mutate { $0.append(Listener.name(event)) } }
            let completions = Box(0)
            let result = await completion { done in
                client.send(Get("/flaky/a?failures=2")) { result in
                    completions.mutate { $0 += 1 }
                    done(result)
                }
            }
            let response = try result.get()
            #expect(response.attempts == 3)
            #expect(response.json["attempt"] == 3)
            #expect(server.hits("/flaky/a") == 3)
            #expect(listener.log.value == ["started", "succeeded"])
            #expect(completions.value == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func givingUpReportsTheLastErrorOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.retryPolicy = Self.fast }
            let error = await client.result(Get("/flaky/b?failures=10")).failure
            #expect(error?.statusCode == 503)
            #expect(server.hits("/flaky/b") == 3)
        }
    }

    @Test(arguments: TransportUnderTest.network) func postIsNotRetriedUnlessTheRequestOptsIn(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.retryPolicy = Self.fast }
            let error = await client.result(Get("/flaky/c?failures=1").with(\.method, .post)).failure
            #expect(error?.statusCode == 503)
            #expect(server.hits("/flaky/c") == 1)
            let optedIn = Get("/flaky/d?failures=1").with(\.method, .post).with(\.pipeline.retryPolicy, Self.fast.retryingNonIdempotentRequests())
            let response = try await client.response(for: optedIn)
            #expect(response.attempts == 2)
        }
    }

    @Test(arguments: TransportUnderTest.network) func clientErrorsAreNotRetried(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.retryPolicy = Self.fast }
            let error = await client.result(Get("/flaky/e?failures=5&status=404")).failure
            #expect(error?.statusCode == 404)
            #expect(server.hits("/flaky/e") == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func connectionLostMidBodyIsRetried(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let response = try await makeClient(server, on: kind) { $0.retryPolicy = Self.fast }.response(for: Get("/flaky/f?failures=1&mode=abort"))
            #expect(response.attempts == 2)
        }
    }

    @Test(arguments: TransportUnderTest.network) func retryAfterIsHonouredAndTooLongARetryAfterEndsTheRetries(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.retryPolicy = Self.fast }
            let started = Date()
            let response = try await client.response(for: Get("/flaky/g?failures=1&status=429&retryAfter=1"))
            #expect(response.attempts == 2)
            #expect(Date().timeIntervalSince(started) >= 0.95)  // waited what the server asked, not 10 ms
            let error = await client.result(Get("/flaky/h?failures=1&status=503&retryAfter=3600")).failure
            #expect(error?.statusCode == 503)
            #expect(server.hits("/flaky/h") == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancellingDuringBackoffDeliversCancelledOnceAndSendsNoMore(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let logger = CapturingLogger()
            // A backoff far longer than the test, so a runner busy with other tests can't miss the window.
            let slow = RetryPolicy(maximumAttempts: 5, initialDelay: 30, maximumDelay: 30, jitter: 0)
            let client = makeClient(server, on: kind) {
                $0.retryPolicy = slow; $0.logMode = .errors; $0.logger = logger
            }
            let outcomes = Box<[Bool]>([])
            let handle = client.send(Get("/flaky/i?failures=4")) { result in outcomes.mutate { $0.append(result.failure?.isCancelled == true) } }
            // The retry line is logged when the backoff starts: cancel inside it.
            #expect(await eventually { logger.text.contains("↻ attempt 2") })
            handle.cancel()
            #expect(outcomes.value == [true])  // delivered at once, from this thread
            #expect(await settled(client))
            #expect(outcomes.value == [true])
            #expect(server.hits("/flaky/i") == 1)
        }
    }

    @Test func backoffGrowsIsCappedAndJittered() {
        let policy = RetryPolicy(maximumAttempts: 10, initialDelay: 0.1, multiplier: 2, maximumDelay: 1, jitter: 0)
        #expect(policy.backoff(afterAttempt: 1) == 0.1)
        #expect(policy.backoff(afterAttempt: 3) == 0.4)
        #expect(policy.backoff(afterAttempt: 9) == 1)
        let jittered = RetryPolicy(maximumAttempts: 10, initialDelay: 1, maximumDelay: 100, jitter: 0.2)
        for _ in 0..<100 {
            let delay = jittered.backoff(afterAttempt: 1)
            #expect(delay >= 0.8 && delay <= 1.2)
        }
    }

    @Test func policyRulesForErrorsMethodsAndAttempts() {
        let policy = RetryPolicy(maximumAttempts: 2)
        let unavailable = NetworkError.httpStatus(ErrorResponse(statusCode: 503, headers: [:], body: Data(), url: nil))
        #expect(policy.delay(afterAttempt: 1, error: unavailable, method: .get) != nil)
        #expect(policy.delay(afterAttempt: 2, error: unavailable, method: .get) == nil)
        #expect(policy.delay(afterAttempt: 1, error: unavailable, method: .patch) == nil)
        #expect(policy.delay(afterAttempt: 1, error: .timedOut(after: 1), method: .get) != nil)
        #expect(policy.delay(afterAttempt: 1, error: .transport(URLError(.networkConnectionLost)), method: .put) != nil)
        #expect(policy.delay(afterAttempt: 1, error: .transport(URLError(.badURL)), method: .get) == nil)
        #expect(policy.delay(afterAttempt: 1, error: .cancelled, method: .get) == nil)
        #expect(RetryPolicy.none.delay(afterAttempt: 1, error: unavailable, method: .get) == nil)
    }

    @Test func retryAfterParsesSecondsAndHTTPDates() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(RetryPolicy.parseRetryAfter("120", now: now) == 120)
        #expect(RetryPolicy.parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == 30)
        #expect(RetryPolicy.parseRetryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now: now) == 0)
        #expect(RetryPolicy.parseRetryAfter("-5", now: now) == nil)
        #expect(RetryPolicy.parseRetryAfter("soon", now: now) == nil)
    }
}

/// Retries and the request adapters: adapters run for every attempt; a cancel during a retry wait ends
/// the send at once and lets it go.
@Suite(hangGuard, admission) struct RetryAdapterTests {
    /// A value whose lifetime shows whether the send that holds it was released.
    final class Canary: Sendable {}

    struct Flaky: Request {
        var path: String
        var canary: Canary? = nil
        var pipeline: RequestPipeline {
            RequestPipeline { $0.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: 0.01, jitter: 0, maximumRetryAfter: 120) }
        }
    }

    @Test(arguments: TransportUnderTest.network) func adaptersRunAgainForEveryAttempt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            server.route(nil, "/fails-twice") { request in
                let attempt = seen.mutate { value -> Int in
                    value.append(request.header("X-Attempt") ?? "-"); return value.count
                }
                return attempt < 3 ? .status(503) : .json(["ok": true])
            }
            let counter = Box(0)
            let numbering = ClosureRequestAdapter { request, _ in
                let n = counter.mutate { value -> Int in
                    value += 1; return value
                }
                request.headers["X-Attempt"] = "\(n)"
            }
            let response = try await makeClient(server, on: kind) { $0.adapters = [numbering] }.response(for: Flaky(path: "/fails-twice"))
            #expect(response.attempts == 3)
            #expect(seen.value == ["1", "2", "3"], "each attempt was adapted anew: \(seen.value)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aCancelDuringARetryWaitEndsTheSendAtOnceAndReleasesIt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/busy") { _ in ServerResponse(status: 503, headers: [("Retry-After", "60")], body: .data(Data("{}".utf8))) }
            let calls = CallRecorder()
            let client = makeClient(server, on: kind) { $0.monitors = [calls] }
            let canary = WeakBox<Canary>()
            let result = Box<Result<Response<Flaky>, NetworkError>?>(nil)
            do {
                let bird = Canary()
                canary.set(bird)
                client.send(Flaky(path: "/busy", canary: bird)) { value in result.mutate { $0 = value } }
            }
            #expect(await eventually(timeout: 20) { calls.calls.value.contains("retry2") }, "now waiting out the 60 s Retry-After")
            client.cancelAll()
            #expect(await eventually(timeout: 20) { result.value != nil })
            #expect(result.value?.failure?.isCancelled == true)
            #expect(await eventually(timeout: 20) { canary.isEmpty }, "the cancelled send is still held (by its retry timer)")
            #expect(server.hits("/busy") == 1)
        }
    }
}
