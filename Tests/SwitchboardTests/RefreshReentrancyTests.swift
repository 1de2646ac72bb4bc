import Foundation
import LoopbackServer
import Switchboard
import Testing

/// The refresh-on-401 pattern with the defaults: the refresh sends through the same dispatcher, with
/// `applies` left at "all requests". Its sends are not adapted by the interceptor and don't wait for
/// it, from its own task, a child task, and the completion closures of sends made there; a 401 to
/// one of them fails the refresh (no loop). Without that rule each of these tests waited for the
/// refresh's own send and failed (after the 30 s refreshTimeout).
@Suite(hangGuard, admission) struct RefreshReentrancyTests {
    struct Me: Request {
        /// Told apart in the query, so that two sends aren't coalesced into one.
        var n = 0
        var path: String { n == 0 ? "/me" : "/me?n=\(n)" }
    }

    struct RefreshToken: Request {
        var path: String
        var method: HTTPMethod { .post }
        init(_ path: String = "/auth/refresh") { self.path = path }
    }

    /// The demo routes, plus token routes that record the Authorization they got.
    static func install(on server: LoopbackServer, seen: Box<[String]>) {
        server.route("POST", "/auth/nonce") { request in
            seen.mutate { $0.append("nonce:" + (request.header("Authorization") ?? "none")) }
            return .json(["nonce": "n-1"])
        }
        server.route("POST", "/auth/exchange") { request in
            seen.mutate { $0.append("exchange:" + (request.header("Authorization") ?? "none")) }
            return .json(["token": "fresh-token"])
        }
        server.route("POST", "/auth/refused") { request in
            seen.mutate { $0.append("refused:" + (request.header("Authorization") ?? "none")) }
            return .json(["error": "refresh token revoked"], status: 401)
        }
    }

    static func client(_ server: LoopbackServer, _ kind: TransportUnderTest) -> Dispatcher {
        makeClient(server) {
            $0.transport = kind.factory
            // Long enough for a loaded 2-core machine; a send that waited for its own refresh would
            // still fail, after the 30 s refreshTimeout.
            $0.timeout = 45
        }
    }

    @Test(arguments: TransportUnderTest.network) func theDefaultPatternRefreshesThroughTheSameDispatcher(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = Self.client(server, kind)
            let calls = Box(0)
            let auth = AuthenticationInterceptor(token: "expired-token") {
                calls.mutate { $0 += 1 }
                // From the refresh's task and from a child task of it.
                async let child = client.response(for: RefreshToken())
                let response = try await client.response(for: RefreshToken())
                _ = try await child
                return response.json["token"].string ?? ""
            }
            client.updateConfiguration { $0.interceptors = [auth] }
            let me = try await client.response(for: Me())
            #expect(me.json["name"] == "Ada" && me.attempts == 2)
            #expect(calls.value == 1 && server.hits("/auth/refresh") == 2)
            #expect(await auth.token == "fresh-token")
            // With no token at all: the first request fetches one the same way.
            let fresh = AuthenticationInterceptor { try await client.response(for: RefreshToken()).json["token"].string ?? "" }
            client.updateConfiguration { $0.interceptors = [fresh] }
            #expect(try await client.response(for: Me()).attempts == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func sendsFromTheRefreshsCompletionHandlersAreInsideItToo(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            Self.install(on: server, seen: seen)
            let client = Self.client(server, kind)
            let auth = AuthenticationInterceptor(token: "expired-token") {
                // A two-step refresh written with completion handlers: the second send starts in the
                // first one's completion, on the callback queue, outside the refresh's task.
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
                    client.send(RefreshToken("/auth/nonce")) { first in
                        guard case .success = first else { return continuation.resume(throwing: first.failure!) }
                        client.send(RefreshToken("/auth/exchange")) { second in
                            continuation.resume(with: second.map { $0.json["token"].string ?? "" }.mapError { $0 as any Error })
                        }
                    }
                }
            }
            client.updateConfiguration { $0.interceptors = [auth] }
            let me = try await client.response(for: Me())
            #expect(me.json["name"] == "Ada")
            #expect(seen.value == ["nonce:none", "exchange:none"], "the refresh's sends go out unadapted: \(seen.value)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aGroupSentByTheRefreshIsInsideIt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            Self.install(on: server, seen: seen)
            let client = Self.client(server, kind)
            let auth = AuthenticationInterceptor(token: "expired-token") {
                // Two requests as one batch: the group sends its members from its own queue.
                let (nonce, exchange) = try await client.batch(RefreshToken("/auth/nonce"), RefreshToken("/auth/exchange"))
                #expect(nonce.json["nonce"] == "n-1")
                return exchange.json["token"].string ?? ""
            }
            client.updateConfiguration { $0.interceptors = [auth] }
            let me = try await client.response(for: Me())
            #expect(me.json["name"] == "Ada")
            #expect(seen.value.sorted() == ["exchange:none", "nonce:none"], "\(seen.value)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRefreshWhoseOwnSendGetsA401Fails(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            Self.install(on: server, seen: seen)
            let client = Self.client(server, kind)
            let calls = Box(0)
            // The refresh swallows its send's 401 and returns a token anyway: the refresh still fails.
            let auth = AuthenticationInterceptor(token: "expired-token") {
                calls.mutate { $0 += 1 }
                let refused = await client.result(RefreshToken("/auth/refused"))
                #expect(refused.failure.map { if case .unauthorized = $0 { true } else { false } } == true, "\(refused)")
                return "fresh-token"
            }
            client.updateConfiguration { $0.interceptors = [auth] }
            let error = await client.result(Me()).failure
            guard case .unauthorized(let answer) = error else {
                Issue.record("expected the 401, got \(String(describing: error))")
                return
            }
            #expect(answer.statusCode == 401)
            #expect(calls.value == 1 && seen.value == ["refused:none"], "one refresh, one send, no loop: \(seen.value)")
            #expect(await auth.token == nil)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRefreshThatRetriesAfterA401FailsAtItsNextSend(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            Self.install(on: server, seen: seen)
            let client = Self.client(server, kind)
            let auth = AuthenticationInterceptor(token: "expired-token") {
                // Tries three times: after the first 401 the others fail at once, without a request.
                for _ in 0..<3 {
                    if case .success(let response) = await client.result(RefreshToken("/auth/refused")) { return response.json["token"].string ?? "" }
                }
                return "fresh-token"
            }
            client.updateConfiguration { $0.interceptors = [auth] }
            let error = await client.result(Me()).failure
            #expect(error.map { if case .unauthorized = $0 { true } else { false } } == true, "\(String(describing: error))")
            #expect(seen.value == ["refused:none"], "\(seen.value)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func twoInterceptorsRefreshingAtOnceDontWaitForEachOther(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            Self.install(on: server, seen: seen)
            let client = Self.client(server, kind)
            // Neither has a token: the first request starts A's refresh, whose send reaches B, which
            // starts its own; B's send then reaches A while A refreshes.
            let a = AuthenticationInterceptor { try await client.response(for: RefreshToken("/auth/nonce")).json["nonce"].string ?? "" }
            let b = AuthenticationInterceptor(header: "X-Second") {
                try await client.response(for: RefreshToken("/auth/exchange")).json["token"].string ?? ""
            }
            client.updateConfiguration { $0.interceptors = [a, b] }
            let answer = try await client.response(for: Get("/echo"))
            #expect(answer.json["headers"]["Authorization"] == "Bearer n-1" && answer.json["headers"]["X-Second"] == "Bearer fresh-token", "\(answer.json)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aSendOutsideTheRefreshStillWaitsForIt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = Self.client(server, kind)
            let gate = AsyncGate()
            let refreshes = Box(0)
            let auth = AuthenticationInterceptor {
                refreshes.mutate { $0 += 1 }
                await gate.wait()
                return "fresh-token"
            }
            let calls = CallRecorder()
            client.updateConfiguration {
                $0.interceptors = [auth]
                $0.monitors = [calls]
            }
            // Two sends from outside: both wait for the one refresh, and go out with its token.
            async let first = client.response(for: Me())
            async let second = client.response(for: Me(n: 2))
            #expect(await eventually(timeout: 30) { calls.calls.value.filter { $0 == "start" }.count == 2 })
            #expect(await eventually(timeout: 30) { await gate.waiting == 1 }, "the refresh is under way")
            #expect(server.hits("/me") == 0, "nothing went out before the token")
            await gate.open()
            let answers = try await [first, second]
            #expect(answers.allSatisfy { $0.json["name"] == "Ada" && $0.attempts == 1 })
            #expect(refreshes.value == 1, "one refresh for both")
            #expect(server.hits("/me") == 2)
        }
    }
}
