import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// One test per trap of URLSession on Linux (shared/linux-foundation.md), against the loopback server.
@Suite(hangGuard, admission) struct TransportTrapTests {
    @Test(arguments: TransportUnderTest.network) func bodiesStayIntactUnderConcurrency(_ kind: TransportUnderTest) async throws {
        // Trap: a concurrent delegate queue garbles reassembled bodies. The session's queue is serial.
        try await withServer { server in
            let client = makeClient(server, on: kind)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in [1, 1000, 65_536, 200_000, 7, 33_333, 100_000, 4096] {
                    group.addTask {
                        let response = try await client.response(for: Get("/bytes/\(n)").with(\.responseFormat, .data))
                        #expect(response.data.count == n)
                        #expect(response.data.elementsEqual((0..<n).lazy.map { UInt8($0 % 256) }))
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test(arguments: TransportUnderTest.network) func slowChunkedBodyIsCollectedWholeWithProgressCountedByUs(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let progress = Box<[Int64]>([])
            client.addObserver(progress, for: Get.self, on: .immediate) { box, event in
                if case .progress(_, let value) = event.kind { box.mutate { $0.append(value.bytesReceived) } }
            }
            let request = Get("/drip?chunks=5&interval=20&size=1000").with(\.responseFormat, .data).with(\.reportsProgress, true)
            let response = try await client.response(for: request)
            #expect(response.data.count == 5000)
            let counts = progress.value
            #expect(!counts.isEmpty)
            #expect(counts == counts.sorted())
            #expect(counts.last == 5000)
        }
    }

    @Test(arguments: TransportUnderTest.network) func basicChallengeWithoutCredentialsFailsAsUnauthorizedInsteadOfHanging(_ kind: TransportUnderTest) async throws {
        // Trap: a 401 with `WWW-Authenticate: Basic` and no handler never completes on Linux.
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.timeout = 20 }
            let error = await client.result(Get("/basic-auth/ada/pw")).failure
            guard case .unauthorized(let response) = error else {
                Issue.record("expected unauthorized, got \(String(describing: error))")
                return
            }
            #expect(response.statusCode == 401)
        }
    }

    @Test(arguments: ["Bearer", "Bearer error=\"invalid_token\"", "Negotiate"])
    func nonBasicChallengesWithoutARealmFailAsUnauthorized(challenge: String) async throws {
        // FoundationNetworking builds the challenge from WWW-Authenticate itself; whatever the scheme,
        // the send must end as `unauthorized`, not hang or crash.
        try await withServer { server in
            server.route("GET", "/token-auth") { _ in
                ServerResponse(
                    status: 401, headers: [("Content-Type", "application/json"), ("WWW-Authenticate", challenge)],
                    body: .data(Data(#"{"error":"invalid_token"}"#.utf8)))
            }
            let error = await makeClient(server).result(Get("/token-auth")).failure
            #expect(error?.statusCode == 401)
            expectError(error, { if case .unauthorized = $0 { true } else { false } }, "unauthorized")
        }
    }

    @Test(arguments: TransportUnderTest.network) func correctCredentialsAuthenticate(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let response = try await makeClient(server, on: kind).response(for: Get("/basic-auth/ada/pw").with(\.credentials, Credentials(user: "ada", password: "pw")))
            #expect(response.json["authenticated"] == true)
        }
    }

    @Test(arguments: TransportUnderTest.network) func wrongCredentialsFailOnceAsUnauthorized(_ kind: TransportUnderTest) async throws {
        // Trap: wrong credentials are re-challenged 3 times, then -999. We stop at the first failure.
        try await withServer { server in
            let error = await makeClient(server, on: kind).result(Get("/basic-auth/ada/pw").with(\.credentials, Credentials(user: "ada", password: "wrong"))).failure
            #expect(error?.statusCode == 401)
            guard case .unauthorized = error else {
                Issue.record("expected unauthorized, got \(String(describing: error))")
                return
            }
            #expect(server.hits("/basic-auth/ada/pw") == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func unauthorizedWithoutChallengeKeepsItsBody(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let error = await makeClient(server, on: kind).result(Get("/unauthorized-no-challenge")).failure
            guard case .unauthorized(let response) = error else {
                Issue.record("expected unauthorized, got \(String(describing: error))")
                return
            }
            #expect(!response.body.isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network) func overallDeadlineIsEnforcedByTheLibrary(_ kind: TransportUnderTest) async throws {
        // Trap: timeoutIntervalForResource is ignored on Linux.
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let started = Date()
            let error = await client.result(Get("/delay/60000").with(\.timeout, 0.5)).failure
            guard case .timedOut(let after) = error else {
                Issue.record("expected timedOut, got \(String(describing: error))")
                return
            }
            #expect(after == 0.5)
            #expect(Date().timeIntervalSince(started) < 30 * timeScale)  // well before the server's 60 s answer
        }
    }

    @Test(arguments: TransportUnderTest.network) func idleTimeoutIsATypedTimeout(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.idleTimeout = 0.5 }
            let error = await client.result(Get("/delay/60000")).failure
            // Told apart from the overall deadline (`timedOut`), and retried by the same rule.
            #expect(RetryPolicy.exponential().delay(afterAttempt: 1, error: error ?? .cancelled, method: .get) != nil)
            guard case .idleTimeout(let after) = error, after == 0.5 else {
                Issue.record("expected idleTimeout(after: 0.5), got \(String(describing: error))")
                return
            }
        }
    }

    @Test(arguments: [307, 308])
    func postKeepsItsBodyAcross307And308(code: Int) async throws {
        // Trap: a 307/308 redirect of a POST keeps the method but drops the body.
        try await withServer { server in
            let client = makeClient(server)
            let request = Echo(method: .post, path: "/redirect/\(code)?to=%2Fecho%2Fafter", parameters: ["a": "1"])
            let response = try await client.response(for: request)
            #expect(response.json["path"].string == "/echo/after")
            #expect(response.json["method"].string == "POST")
            #expect(response.json["form"]["a"].string == "1")
        }
    }

    @Test(arguments: TransportUnderTest.network) func crossOriginRedirectDropsCredentialsButKeepsOtherHeaders(_ kind: TransportUnderTest) async throws {
        // Trap: Authorization and Cookie are forwarded to another host.
        try await withServer { server in
            let target = "http://localhost:\(server.port)/echo/elsewhere"
            let request = Echo(
                path: "/redirect/302?to=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")",
                headers: ["Cookie": "session=1", "X-Custom": "kept"],
                credentials: Credentials(user: "ada", password: "pw")
            )
            let response = try await makeClient(server, on: kind).response(for: request)
            #expect(response.json["path"].string == "/echo/elsewhere")
            #expect(response.json["headers"]["Authorization"].isNull)
            #expect(response.json["headers"]["Cookie"].isNull)
            #expect(response.json["headers"]["X-Custom"].string == "kept")
        }
    }

    @Test(arguments: TransportUnderTest.network) func sameOriginRedirectKeepsCredentials(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let request = Echo(path: "/redirect/302?to=%2Fecho%2Fsame", credentials: Credentials(user: "ada", password: "pw"))
            let response = try await makeClient(server, on: kind).response(for: request)
            #expect(response.json["path"].string == "/echo/same")
            #expect(response.json["headers"]["Authorization"].string == Credentials(user: "ada", password: "pw").authorizationHeader)
        }
    }

    @Test(arguments: TransportUnderTest.network) func connectionsPerHostIsConfigurable(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.maximumConnectionsPerHost = 2 }
            // One connection made first: on a cold start FoundationNetworking's libcurl may hold a
            // second request until the first one's answer says what the connection speaks (seen under
            // the thread sanitizer: the held first request kept the second out for 30 s).
            _ = try await client.response(for: Get("/echo/warm"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Each answer is held until the test releases them, once two are in: the limit, used.
                for i in 0..<12 { group.addTask { _ = try await client.response(for: Get("/concurrent/per-host?hold=release&i=\(i)")) } }
                // Two in the handler at once (not just arrived: a hit is counted before the handler runs).
                #expect(await eventually(timeout: 30) { server.concurrencyPeak("per-host") == 2 })
                server.release("per-host")
                try await group.waitForAll()
            }
            #expect(server.hits("/concurrent/per-host") == 12)
            #expect(server.concurrencyPeak("per-host") == 2, "two at once, never more")
            #expect(server.connectionsAccepted == 2)
        }
    }

    @Test(arguments: TransportUnderTest.network) func responseLargerThanTheLimitFails(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.maximumResponseSize = 10_000 }
            let declared = await client.result(Get("/bytes/50000").with(\.responseFormat, .data)).failure
            guard case .responseTooLarge(10_000) = declared else {
                Issue.record("expected responseTooLarge, got \(String(describing: declared))")
                return
            }
            let chunked = await client.result(Get("/drip?chunks=4&interval=1&size=4000").with(\.responseFormat, .data)).failure
            guard case .responseTooLarge = chunked else {
                Issue.record("expected responseTooLarge for a chunked body, got \(String(describing: chunked))")
                return
            }
        }
    }

    @Test(arguments: TransportUnderTest.network) func serverClosingMidBodyIsAConnectionLostError(_ kind: TransportUnderTest) async throws {
        // libcurl reports it as an unknown error (-1); Switchboard names it.
        try await withServer { server in
            let error = await makeClient(server, on: kind).result(Get("/abort?declared=1000&sent=100")).failure
            guard case .transport(let urlError) = error else {
                Issue.record("expected transport error, got \(String(describing: error))")
                return
            }
            #expect(urlError.code == .networkConnectionLost)
        }
    }

    @Test(arguments: TransportUnderTest.network) func compressedBodyIsNotCheckedAgainstItsEncodedContentLength(_ kind: TransportUnderTest) async throws {
        // Trap: Content-Length is the encoded size; URLSession hands over the decoded bytes.
        try await withServer { server in
            let response = try await makeClient(server, on: kind).response(for: Get("/gzip"))
            #expect(response.json["gzipped"] == true)
            #expect(response.json["items"] == [1, 2, 3])
            #expect(Int(response.headers["Content-Length"] ?? "") ?? 0 > response.data.count)
        }
    }

    @Test(arguments: TransportUnderTest.network) func redirectLoopsEndWithATypedError(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let ok = try await makeClient(server, on: kind).response(for: Get("/redirect-chain/5"))
            #expect(ok.json["path"].string == "/echo")
            let error = await makeClient(server, on: kind).result(Get("/redirect-chain/40")).failure
            guard case .transport(let urlError) = error else {
                Issue.record("expected transport error, got \(String(describing: error))")
                return
            }
            #expect(urlError.code == .httpTooManyRedirects)
        }
    }

    @Test(arguments: TransportUnderTest.network) func manuallyFollowed307KeepsItsBodyAcrossSeveralHops(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let hop2 = "/redirect/308?to=%2Fecho%2Ffinal"
            let hop1 = "/redirect/307?to=" + (hop2.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let response = try await makeClient(server, on: kind).response(for: Echo(method: .put, path: hop1, parameters: ["k": "v"], parameterEncoding: .json))
            #expect(response.json["path"].string == "/echo/final")
            #expect(response.json["method"].string == "PUT")
            #expect(response.json["json"]["k"] == "v")
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancellingDuringAManualRedirectStopsTheNextHop(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let outcome = Box<Result<Response<Echo>, NetworkError>?>(nil)
            let handle = client.send(Echo(method: .post, path: "/redirect/307?to=%2Fdelay%2F60000", parameters: ["a": "1"])) { result in
                outcome.mutate { $0 = result }
            }
            #expect(await eventually { server.hits("/delay/60000") == 1 })
            handle.cancel()
            #expect(await eventually(timeout: 30) { outcome.value != nil })
            #expect(outcome.value?.failure?.isCancelled == true)
            // The next hop's transfer ended with the cancel: the transport reported its end within the
            // wait (30 s of the time the process could run), not at the hop's 60 s answer.
            #expect(await settled(client))
            #expect(server.hits("/delay/60000") == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func serverClosingWithoutResponseIsATransportError(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let error = await makeClient(server, on: kind).result(Get("/close")).failure
            guard case .transport = error else {
                Issue.record("expected transport error, got \(String(describing: error))")
                return
            }
        }
    }

}

extension Request {
    /// A copy with one property changed, for compact test requests.
    func with<V>(_ keyPath: WritableKeyPath<Self, V>, _ value: V) -> Self {
        var copy = self
        copy[keyPath: keyPath] = value
        return copy
    }
}
