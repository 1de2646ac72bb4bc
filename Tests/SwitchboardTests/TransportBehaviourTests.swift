import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// What every network transport does alike beyond the rules: content decoding, the idle timeout,
/// connection reuse, deadlines through a dispatcher, cancels from many threads, many transfers at once.
@Suite(hangGuard, admission) struct TransportBehaviourTests {
    @Test(arguments: TransportUnderTest.network) func aGzipBodyArrivesDecoded(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let record = await transfer(kind.make([server]), TransportRequest(URLRequest(url: server.url("/gzip"))))
            #expect(record.json["gzipped"] == true, "\(String(describing: record.result))")
        }
    }

    /// The idle timeout is the time with no byte, to within a second: before anything arrives, after a
    /// head and a few bytes, and after a drip that kept the transfer alive for longer than the timeout
    /// (libcurl's low-speed limit, which counted whole seconds, once fired 6 s late there).
    @Test(arguments: ["silent", "after a head", "after a drip"], TransportUnderTest.network)
    func aSilentServerEndsInTheIdleTimeoutOnTime(_ shape: String, _ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let head = Data("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n".utf8)
            let drip = [head] + (0..<6).map { _ in Data("x".utf8) }
            server.route(nil, "/stall") { _ in
                switch shape {
                case "silent": ServerResponse(status: 200, body: .never)
                case "after a head": ServerResponse(status: 200, body: .rawHeld(head + Data("abc".utf8)))
                default: ServerResponse(status: 200, body: .rawDripHeld(drip, interval: 0.5))  // the last byte at 2.5 s
                }
            }
            // Half a second where the timer is to the millisecond (libcurl); FoundationNetworking counts
            // whole seconds (0.5 is rounded up to 1, which would leave half the second of slack).
            let idle: TimeInterval = shape == "silent" && kind == .curl ? 0.5 : 1
            let transport = kind.make([server], configuration: Configuration { $0.idleTimeout = idle })
            let started = Date()
            let record = await transfer(transport, TransportRequest(URLRequest(url: server.url("/stall"))), timeout: 40)
            guard case .idleTimeout(let after)? = record.error else {
                Issue.record("\(shape) on \(kind): expected idleTimeout, got \(String(describing: record.result))")
                return
            }
            #expect(after == idle)
            // When the transport reported (not when this task resumed: a loaded pool may be slow),
            // measured from the last byte that arrived (a loaded server drips later than planned).
            let lastByte = record.lastByteAt ?? started
            if shape == "after a drip" { #expect(lastByte.timeIntervalSince(started) >= 2.5 - 0.05, "the drip kept it alive") }
            let took = (record.completedAt ?? .distantFuture).timeIntervalSince(lastByte)
            #expect(took >= idle - 0.05, "\(shape) on \(kind): ended \(took) s after the last byte, before the timeout")
            #expect(took < idle + 1 * timeScale, "\(shape) on \(kind): ended \(took) s after the last byte, more than a second past the idle timeout")
            #expect(record.completions == 1)
        }
    }

    /// Time spent waiting for a free connection is idle time, on both transports (as FoundationNetworking
    /// counts it): with one connection per host, held by a transfer the server answers only when told,
    /// a second transfer with a 1 s idle timeout ends in `idleTimeout` without reaching the server.
    @Test(arguments: TransportUnderTest.network) func waitingForAFreeConnectionIsIdleTime(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server], configuration: Configuration { $0.maximumConnectionsPerHost = 1 })
            let first = Task {
                await transfer(
                    transport, TransportRequest(URLRequest(url: server.url("/concurrent/busy?hold=release"))), options: TransferOptions(timeout: 60, idleTimeout: 60), timeout: 60)
            }
            #expect(await eventually(timeout: 20) { server.hits("/concurrent/busy") == 1 })
            // `settles: false`: the first transfer is held on purpose (its own call checks it at its end).
            let queued = await transfer(
                transport, TransportRequest(URLRequest(url: server.url("/echo"))), options: TransferOptions(timeout: 60, idleTimeout: 1), timeout: 60, settles: false)
            guard case .idleTimeout(1)? = queued.error else {
                Issue.record("\(kind): the queued transfer got \(String(describing: queued.result))")
                server.release("busy")
                return
            }
            #expect(server.hits("/echo") == 0)
            server.release("busy")
            #expect(await first.value.response?.httpResponse.statusCode == 200)
        }
    }

    /// An idle timeout that is no number of seconds (0, negative, NaN, infinity) means none, and a huge
    /// one is 23 days: nothing traps (FoundationNetworking did beyond 24.8 days), and the answer arrives.
    @Test(arguments: [0, -1, .nan, .infinity, 1e11, 1e300], TransportUnderTest.network)
    func anIdleTimeoutThatIsNoDurationMeansNone(_ idle: Double, _ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.idleTimeout = idle }
            let response = try await client.response(for: Get("/delay/300"))
            #expect(response.json["delayed"] == 300)
            // Through the transport alone too, with the request's own default.
            let record = await transfer(kind.make([server], configuration: Configuration { $0.idleTimeout = idle }), TransportRequest(URLRequest(url: server.url("/delay/300"))))
            #expect(record.response?.httpResponse.statusCode == 200, "\(String(describing: record.result))")
        }
    }

    /// A caller of a transport who set the request's own `timeoutInterval` (and no idle timeout in the
    /// options) gets that one, not the configuration's: assigned, or given to `URLRequest`'s
    /// initializer (which FoundationNetworking alone would ignore for the session's).
    @Test(arguments: TransportUnderTest.network) func aRequestsOwnTimeoutIntervalIsItsIdleTimeout(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server], configuration: Configuration { $0.idleTimeout = 30 })
            var assigned = URLRequest(url: server.url("/delay/60000"))
            assigned.timeoutInterval = 1
            let initialized = URLRequest(url: server.url("/delay/60000"), timeoutInterval: 1)
            for (name, request) in [("assigned", assigned), ("initialized", initialized)] {
                let started = Date()
                let record = await transfer(transport, TransportRequest(request), timeout: 40)
                guard case .idleTimeout(let after)? = record.error else {
                    Issue.record("\(kind), \(name): expected idleTimeout, got \(String(describing: record.result))")
                    return
                }
                #expect(after == 1)
                // Well under the configuration's 30 s, with room for a loaded machine (3.4 s seen there).
                #expect((record.completedAt ?? .distantFuture).timeIntervalSince(started) < 1 + 10 * timeScale, "\(kind), \(name)")
            }
        }
    }

    /// A request's own idle timeout (YTKNetwork's `requestTimeoutInterval`) wins over the
    /// configuration's, both ways: 1 s under a configuration of 120 s ends a silent answer in
    /// `idleTimeout(after: 1)`; 0 (none) under a configuration of 1 s lets a 1.5 s answer arrive; and a
    /// request without one keeps the configuration's. The ad-hoc `Endpoint` carries one too.
    @Test(arguments: TransportUnderTest.network) func aRequestsOwnIdleTimeoutWinsOverTheConfigurations(_ kind: TransportUnderTest) async throws {
        struct Quiet: Request {
            let path: String
            let idleTimeout: TimeInterval?
        }
        try await withServer { server in
            let patient = makeClient(server, on: kind)  // idle timeout 120 s
            let started = Date()
            let result = await patient.result(Quiet(path: "/delay/60000", idleTimeout: 1))
            guard case .failure(.idleTimeout(let after)) = result else {
                Issue.record("\(kind): expected idleTimeout(after: 1), got \(result)")
                return
            }
            #expect(after == 1)
            // Far below the configuration's 120 s, with room for a loaded machine's stalls (20 s seen).
            #expect(Date().timeIntervalSince(started) < 45 * timeScale, "the request's 1 s, not the configuration's 120 s")
            let adHoc = await patient.result(Endpoint<JSON>(.get, "/delay/60000", idleTimeout: 1))
            guard case .failure(.idleTimeout(1)) = adHoc else {
                Issue.record("\(kind): the ad-hoc request got \(adHoc)")
                return
            }

            let hasty = makeClient(server, on: kind) { $0.idleTimeout = 1 }
            let none = try await hasty.response(for: Quiet(path: "/delay/2500", idleTimeout: 0))
            #expect(none.json["delayed"] == 2500, "0: no idle timeout for this request")
            let inherited = await hasty.result(Quiet(path: "/delay/60000", idleTimeout: nil))
            guard case .failure(.idleTimeout(1)) = inherited else {
                Issue.record("\(kind): a request without its own idle timeout got \(inherited)")
                return
            }
        }
    }

    /// A standard request's own idle timeout holds on every way to the transport: a GET (stage 4, which
    /// shares identical transfers), a POST and a GET with coalescing off (stage 5), and through a
    /// transport that wraps the package's and swaps in a request made with
    /// `URLRequest(url:timeoutInterval:)` of the same value. Each ends in `idleTimeout(after: 1)`; a
    /// 30 s deadline ends it in `timedOut` if the configuration's 120 s applied instead.
    @Test(arguments: TransportUnderTest.network) func aStandardRequestsIdleTimeoutHoldsOnEveryWayToTheTransport(_ kind: TransportUnderTest) async throws {
        struct Quiet: Request {
            var path: String { "/delay/60000" }
            var method: HTTPMethod = .get
            var idleTimeout: TimeInterval? { 1 }
            var timeout: TimeInterval? { 30 }
        }
        /// Sends a new `URLRequest` with the same URL and `timeoutInterval`, made by the initializer.
        struct Rebuilding: Transport {
            let inner: any Transport
            func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
                var rebuilt = request
                if let url = request.urlRequest.url { rebuilt.urlRequest = URLRequest(url: url, timeoutInterval: request.urlRequest.timeoutInterval) }
                return inner.perform(rebuilt, options: options, callbacks: callbacks)
            }
            var addedCookies: TransportCookies { inner.addedCookies }
            func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool { inner.applies(serverTrust: serverTrust, proxy: proxy) }
        }
        try await withServer { server in
            var wrapped = Configuration()
            wrapped.baseURL = server.baseURL
            wrapped.idleTimeout = 120
            let ways: [(String, Dispatcher, Quiet)] = [
                ("a shared GET", makeClient(server, on: kind), Quiet()),
                ("a POST", makeClient(server, on: kind), Quiet(method: .post)),
                ("a GET, coalescing off", makeClient(server, on: kind) { $0.coalescesDuplicates = false }, Quiet()),
                ("a wrapping transport", Dispatcher(configuration: wrapped, transport: Rebuilding(inner: kind.make([server], configuration: wrapped))), Quiet()),
            ]
            for (way, client, request) in ways {
                let result = await client.result(request)
                guard case .failure(.idleTimeout(1)) = result else {
                    Issue.record("\(kind), \(way): expected idleTimeout(after: 1), got \(result)")
                    continue
                }
            }
        }
    }

    /// Through a dispatcher too, a custom `URLRequest` (YTKNetwork's `buildCustomUrlRequest`) keeps the
    /// `timeoutInterval` it set as its idle timeout, over the configuration's; a request's own
    /// `idleTimeout` wins over both.
    @Test(arguments: TransportUnderTest.network) func aCustomURLRequestsTimeoutIntervalIsItsIdleTimeoutThroughADispatcher(_ kind: TransportUnderTest) async throws {
        struct Built: Request {
            let urlRequest: URLRequest
            var idleTimeout: TimeInterval?
            var timeout: TimeInterval?
            var path: String { "/ignored" }
            func makeURLRequest(baseURL: URL?) throws -> URLRequest? { urlRequest }
        }
        try await withServer { server in
            let client = makeClient(server, on: kind)  // idle timeout 120 s
            var silent = URLRequest(url: server.url("/delay/60000"))
            silent.timeoutInterval = 1
            let result = await client.result(Built(urlRequest: silent))
            guard case .failure(.idleTimeout(1)) = result else {
                Issue.record("\(kind): expected the URLRequest's 1 s, got \(result)")
                return
            }
            // Given to the initializer rather than assigned: the same 1 s (a 30 s deadline ends the
            // send with `timedOut` if the configuration's 120 s applied instead).
            let initialized = URLRequest(url: server.url("/delay/60000"), timeoutInterval: 1)
            let fromInitializer = await client.result(Built(urlRequest: initialized, timeout: 30))
            guard case .failure(.idleTimeout(1)) = fromInitializer else {
                Issue.record("\(kind): expected the initializer's 1 s, got \(fromInitializer)")
                return
            }
            // 60 s is URLRequest's default, which can't be told from unset: the configuration's applies.
            let hasty = makeClient(server, on: kind) { $0.idleTimeout = 1 }
            var unset = URLRequest(url: server.url("/delay/60000"))
            unset.timeoutInterval = 60
            guard case .failure(.idleTimeout(1)) = await hasty.result(Built(urlRequest: unset)) else {
                Issue.record("\(kind): a URLRequest with the default 60 s did not get the configuration's 1 s")
                return
            }
            var slow = URLRequest(url: server.url("/delay/2500"))
            slow.timeoutInterval = 1
            let response = try await client.response(for: Built(urlRequest: slow, idleTimeout: 0))
            #expect(response.json["delayed"] == 2500, "the request's own idle timeout (none) wins")
        }
    }

    /// No extra round trip on a cold start: with no connection open, N concurrent sends to one host all
    /// reach it before any is answered (the route answers only once all four are in). libcurl's
    /// `PIPEWAIT` on clear-text transfers once made the others wait for the first one's response.
    @Test(arguments: TransportUnderTest.network) func concurrentSendsOnAColdStartAllGoOutAtOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let results = await withTaskGroup(of: Int?.self) { group in
                for index in 0..<4 {
                    group.addTask { try? await client.response(for: Get("/concurrent/cold?together=4&i=\(index)")).json["inProgress"].int }
                }
                return await group.reduce(into: [Int?]()) { $0.append($1) }
            }
            #expect(results.count == 4 && results.allSatisfy { $0 != nil }, "\(results)")
            #expect(server.concurrencyPeak("cold") == 4, "all four were in progress at once")
        }
    }

    @Test(arguments: TransportUnderTest.network) func sequentialTransfersReuseOneConnection(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            for _ in 0..<5 {
                let record = await transfer(transport, TransportRequest(URLRequest(url: server.url("/small"))))
                #expect(record.response?.httpResponse.statusCode == 200)
            }
            #expect(server.connectionsAccepted == 1)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aDispatcherDeadlineEndsATransferInTimedOut(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.transport = kind.factory }
            let started = Date()
            let error = await client.result(Get("/delay/60000").with(\.timeout, 0.5)).failure
            #expect(error.map { if case .timedOut = $0 { true } else { false } } == true, "\(String(describing: error))")
            // Not the server's minute. (Wider than the deadline by far: on a loaded 2-core machine the
            // suite's CPU-bound tests hold the concurrency pool's two threads, and this task resumed
            // 20 s late more than once.)
            #expect(Date().timeIntervalSince(started) < 45 * timeScale)
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancelsFromManyThreadsEndATransferOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let completions = Box(0)
            let results = Box([NetworkError?]())
            let tasks = (0..<20).map { _ in
                transport.perform(URLRequest(url: server.url("/delay/10000")), options: TransferOptions(timeout: 30)) { result in
                    completions.mutate { $0 += 1 }
                    results.mutate { $0.append(result.failure) }
                }
            }
            DispatchQueue.concurrentPerform(iterations: 80) { i in tasks[i % tasks.count].cancel() }
            #expect(await eventually(timeout: 10 * timeScale) { completions.value == 20 })
            #expect(await settled(transport))
            #expect(completions.value == 20)
            #expect(results.value.allSatisfy { $0?.isCancelled == true })
        }
    }

    @Test(arguments: TransportUnderTest.network) func manyConcurrentTransfersAllArriveWhole(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server) {
                $0.transport = kind.factory; $0.coalescesDuplicates = false
            }
            let results = await withTaskGroup(of: Bool.self) { group in
                for i in 0..<200 {
                    group.addTask {
                        let response = try? await client.response(for: Get("/bytes/\(1000 + i)").with(\.responseFormat, .data))
                        return response?.data == TransportConformanceTests.pattern(0..<(1000 + i))
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.count == 200 && results.allSatisfy { $0 })
        }
    }

    @Test(arguments: TransportUnderTest.network) func cookiesSetByTheServerAreSentBack(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.transport = kind.factory }
            _ = await client.result(Get("/set-cookie"))
            let echoed = try await client.response(for: Get("/echo"))
            #expect(echoed.json["headers"]["Cookie"].string?.contains("session=abc") == true, "\(echoed.json["headers"])")
        }
    }
}
