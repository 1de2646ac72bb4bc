import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// A cancel in each place a send can wait: mid-upload, inside a shared token refresh, during a
/// revalidation, and against a completion that is arriving at that moment. Each ends the send once,
/// `cancelled` (or, once delivery has begun, with the outcome being delivered), and leaves nothing
/// behind.
@Suite(hangGuard, admission) struct CancelMidwayTests {
    // MARK: Mid-upload

    @Test(arguments: TransportUnderTest.network) func aCancelMidUploadEndsOnceAndRemovesTheTemporaryBody(_ kind: TransportUnderTest) async throws {
        let directory = try MultipartTests.scratch(), temporary = try MultipartTests.scratch()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: temporary)
        }
        let file = directory.appendingPathComponent("big.bin")
        try Data(count: 24 << 20).write(to: file)
        try await withServer { server in
            // 64 KiB every 500 ms: the 24 MiB body takes over 3 minutes, so the cancel lands mid-body
            // even when the first progress report is held up for a while (the whole suite in parallel
            // on two cores: 20 s was not always enough).
            server.readBodiesSlowly(at: "/upload/sink", pausePerPiece: 0.5)
            let client = makeClient(server, on: kind) {
                $0.multipartMemoryThreshold = 64 << 10
                $0.temporaryDirectory = temporary
                // Progress on a queue of the test's own: on the main queue, which other tests running
                // beside it may hold, the first report (and so the cancel) could come after the whole
                // body was sent.
                $0.callbackQueue = .queue(DispatchQueue(label: "cancel-mid-upload"))
            }
            var form = MultipartFormData()
            form.append(fileAt: file, name: "file")
            let sent = Box(Int64(0))
            let outcomes = Box([NetworkError?]())
            let handle = client.send(MultipartTests.Upload(path: "/upload/sink", form: form), progress: { value in sent.mutate { $0 = value.bytesSent } }) { result in
                outcomes.mutate { $0.append(result.failure) }
            }
            #expect(await eventually(timeout: 30) { sent.value > 0 })
            let during = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
            #expect(during.count == 1, "the body is in its temporary file")
            handle.cancel()
            #expect(await eventually(timeout: 10) { outcomes.value.count == 1 })
            #expect(sent.value < 24 << 20, "cancelled mid-body")
            #expect(await settled(client))
            #expect(outcomes.value.count == 1 && outcomes.value.first??.isCancelled == true, "\(outcomes.value)")
            let after = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
            #expect(after.isEmpty, "the temporary body is removed")
            #expect(server.hits("/upload/sink") == 0, "the server never got the whole body")
        }
    }

    // MARK: Inside a shared token refresh

    @Test(arguments: TransportUnderTest.network) func aCancelWhileWaitingForASharedRefreshEndsThatSendAloneAndSendsNothing(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let gate = AsyncGate()
            let refreshes = Box(0)
            let auth = AuthenticationInterceptor {
                refreshes.mutate { $0 += 1 }
                await gate.wait()
                return "fresh-token"
            }
            let calls = CallRecorder()
            let client = makeClient(server, on: kind) {
                $0.interceptors = [auth]
                $0.monitors = [calls]
            }
            let first = Box<Result<Response<RefreshReentrancyTests.Me>, NetworkError>?>(nil), second = Box<Result<Response<RefreshReentrancyTests.Me>, NetworkError>?>(nil)
            let cancelled = client.send(RefreshReentrancyTests.Me(n: 1)) { result in first.mutate { $0 = result } }
            client.send(RefreshReentrancyTests.Me(n: 2)) { result in second.mutate { $0 = result } }
            #expect(await eventually(timeout: 30) { calls.calls.value.filter { $0 == "start" }.count == 2 })
            #expect(await eventually(timeout: 30) { await gate.waiting == 1 }, "the refresh is under way")
            cancelled.cancel()
            #expect(await eventually(timeout: 10) { first.value != nil }, "the cancel doesn't wait for the refresh")
            #expect(first.value?.failure?.isCancelled == true)
            #expect(second.value == nil, "the other send still waits")
            await gate.open()
            #expect(await eventually(timeout: 30) { second.value != nil })
            let answer = try #require(try second.value?.get())
            #expect(answer.json["name"] == "Ada" && answer.attempts == 1)
            #expect(refreshes.value == 1)
            #expect(await settled(client))
            #expect(server.hits("/me") == 1, "the cancelled send never went out")
            #expect(first.value?.failure?.isCancelled == true, "still the one outcome")
        }
    }

    // MARK: During a revalidation

    struct Tagged: Request {
        var path: String { "/tagged" }
        var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 0) }
    }

    @Test(arguments: TransportUnderTest.network) func aCancelDuringARevalidationEndsOnceAndKeepsTheStoredEntry(_ kind: TransportUnderTest) async throws {
        let scratch = CacheTests.Scratch()
        try await withServer { server in
            let held = RequestGate()
            let revalidations = Box(0)
            server.route("GET", "/tagged") { request in
                let headers = [("ETag", #""t1""#), ("Cache-Control", "no-cache")]
                guard request.header("If-None-Match") == #""t1""# else { return .json(["name": "tagged"], headers: headers) }
                // The first revalidation is held until the test opens the gate; later ones are not.
                revalidations.mutate { $0 += 1 }
                if revalidations.value == 1 { held.pass(request) }
                return ServerResponse(status: 304, headers: headers)
            }
            let client = CacheTests.client(server, on: kind, scratch.cache())
            let log = EventLog<Tagged>()
            client.addObserver(log, for: Tagged.self, on: .immediate) { $0.record($1) }
            #expect(try await client.response(for: Tagged()).source == .network)
            let outcomes = Box([NetworkError?]())
            let handle = client.send(Tagged()) { result in outcomes.mutate { $0.append(result.failure) } }
            #expect(await eventually(timeout: 30) { held.arrived == 1 }, "the revalidation reached the server")
            handle.cancel()
            #expect(await eventually(timeout: 10) { outcomes.value.count == 1 })
            held.open()
            #expect(await settled(client))
            #expect(outcomes.value.count == 1 && outcomes.value.first??.isCancelled == true, "\(outcomes.value)")
            let kinds = log.events.filter { $0.sendID == handle.id }.map { Listener.name($0) }
            #expect(kinds == ["started", "cancelled"], "no cached event for a cancelled revalidation")
            // The stored entry is still there: the next send revalidates it.
            let next = try await client.response(for: Tagged())
            #expect(next.source == .revalidated && next.json["name"] == "tagged")
        }
    }

    // MARK: Against a completion arriving now

    /// Cancels a send through its handle at one point of its life.
    final class CancelAt: EventMonitor {
        enum Point: String, CaseIterable, Sendable { case received, decoded, willDeliver }
        let point: Point
        let handle = Box<RequestHandle?>(nil)
        init(_ point: Point) { self.point = point }
        func request(_ send: SendContext, didReceive result: Result<TransportResponse, NetworkError>, attempt: Int) {
            if point == .received { handle.value?.cancel() }
        }
        func request(_ send: SendContext, didDecode result: Result<ResponseContext, NetworkError>, attempt: Int) {
            if point == .decoded { handle.value?.cancel() }
        }
        func requestWillDeliver(_ send: SendContext, error: NetworkError?) {
            if point == .willDeliver { handle.value?.cancel() }
        }
    }

    /// A cancel that lands as the transfer's response arrives, after it was decoded, or as delivery
    /// begins: one outcome, the same to the completion and the observers. Before delivery the cancel
    /// wins; once delivery has begun, the success stands.
    @Test(arguments: TransportUnderTest.network, CancelAt.Point.allCases)
    func aCancelAsTheResponseArrivesEndsTheSendOnce(_ kind: TransportUnderTest, _ point: CancelAt.Point) async throws {
        try await withServer { server in
            let monitor = CancelAt(point)
            let client = makeClient(server, on: kind) { $0.monitors = [monitor] }
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            let outcomes = Box([Result<Response<Get>, NetworkError>]())
            // The answer waits until the monitor has the handle.
            let handle = client.send(Get("/concurrent/arriving?hold=release")) { result in outcomes.mutate { $0.append(result) } }
            monitor.handle.mutate { $0 = handle }
            server.release("arriving")
            #expect(await eventually(timeout: 30) { outcomes.value.count == 1 })
            #expect(await settled(client))
            #expect(outcomes.value.count == 1)
            let kinds = log.events.filter { $0.sendID == handle.id }.map { Listener.name($0) }
            switch point {
            case .received, .decoded:
                #expect(outcomes.value.first?.failure?.isCancelled == true)
                #expect(kinds == ["started", "cancelled"])
            case .willDeliver:
                #expect(outcomes.value.first?.failure == nil)
                #expect(kinds == ["started", "succeeded"])
            }
            #expect(server.hits("/concurrent/arriving") == 1)
        }
    }

    /// Counts the retry decisions it is asked for, and always answers retry.
    final class AlwaysRetries: RequestInterceptor {
        let asked = Box(0)
        func retry(_ context: RetryContext) async -> RetryDecision {
            asked.mutate { $0 += 1 }
            return .retry
        }
    }

    /// A cancel while a failed attempt is checked (the monitor's `didDecode` runs in that phase) ends
    /// the send `cancelled`: the interceptors are never asked to retry it. (They were, and the send
    /// was sent again.)
    @Test(arguments: TransportUnderTest.network) func aCancelWhileAFailureIsCheckedIsNotHandedToTheInterceptors(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route("GET", "/failing") { _ in .status(500) }
            let monitor = CancelAt(.decoded)
            let interceptor = AlwaysRetries()
            let client = makeClient(server, on: kind) {
                $0.monitors = [monitor]
                $0.interceptors = [interceptor]
                $0.callbackQueue = .immediate
            }
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            let outcomes = Box([Result<Response<Get>, NetworkError>]())
            let handle = client.send(Get("/failing")) { result in outcomes.mutate { $0.append(result) } }
            monitor.handle.mutate { $0 = handle }
            #expect(await eventually(timeout: 30) { outcomes.value.count == 1 })
            #expect(await settled(client))
            #expect(outcomes.value.count == 1 && outcomes.value.first?.failure?.isCancelled == true, "\(outcomes.value)")
            #expect(log.events.filter { $0.sendID == handle.id }.map { Listener.name($0) } == ["started", "cancelled"])
            #expect(interceptor.asked.value == 0)
            #expect(server.hits("/failing") == 1)
        }
    }

    /// Adapts only once the test lets it, and doesn't heed its task's cancel.
    final class StubbornAdapter: RequestInterceptor {
        let entered = Box(false)
        let gate = DispatchSemaphore(value: 0)
        func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest {
            entered.mutate { $0 = true }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                onOwnThread {
                    self.gate.wait()
                    continuation.resume()
                }
            }
            return request
        }
    }

    /// A cancel while an interceptor adapts ends the send at once, on the cancelling thread, even when
    /// the interceptor ignores its task's cancel; what it returns later is dropped and nothing is sent.
    @Test(arguments: TransportUnderTest.network) func aCancelWhileAnInterceptorAdaptsEndsTheSendAtOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let interceptor = StubbornAdapter()
            let client = makeClient(server, on: kind) {
                $0.interceptors = [interceptor]
                $0.callbackQueue = .immediate
            }
            let outcomes = Box([Result<Response<Get>, NetworkError>]())
            let handle = client.send(Get("/echo")) { result in outcomes.mutate { $0.append(result) } }
            #expect(await eventually(timeout: 30) { interceptor.entered.value })
            handle.cancel()
            // `.immediate`: the completion ran inside `cancel()`, before the interceptor was let go.
            #expect(outcomes.value.count == 1 && outcomes.value.first?.failure?.isCancelled == true, "\(outcomes.value)")
            interceptor.gate.signal()
            #expect(await settled(client))
            #expect(outcomes.value.count == 1)
            #expect(server.hits("/echo") == 0)
        }
    }

    /// Where a `FailsToBuild` waits: one per test case (cases run in parallel).
    final class BuildGate: Sendable {
        let entered = Box(false)
        let gate = DispatchSemaphore(value: 0)
    }

    /// Builds only once the test lets it, then fails; its multipart file part makes the send build on
    /// a global queue, so a cancel can come while it builds.
    struct FailsToBuild: Request {
        let gate: BuildGate
        var path: String { "/echo" }
        var method: HTTPMethod { .post }
        var body: RequestBody? {
            var form = MultipartFormData()
            form.append(fileAt: URL(fileURLWithPath: "/nonexistent/switchboard-\(UUID().uuidString)"), name: "file")
            return .multipart(form)
        }
        struct Refused: Error {}
        func makeURLRequest(baseURL: URL?) throws -> URLRequest? {
            gate.entered.mutate { $0 = true }
            gate.gate.wait()
            throw Refused()
        }
    }

    /// A cancel while the request is built ends the send `cancelled`, even when building then fails.
    @Test(arguments: TransportUnderTest.network) func aCancelWhileBuildingWinsOverTheBuildsError(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.callbackQueue = .immediate }
            let gate = BuildGate()
            let outcomes = Box([Result<Response<FailsToBuild>, NetworkError>]())
            let handle = client.send(FailsToBuild(gate: gate)) { result in outcomes.mutate { $0.append(result) } }
            #expect(await eventually(timeout: 30) { gate.entered.value })
            handle.cancel()
            gate.gate.signal()
            #expect(await eventually(timeout: 30) { outcomes.value.count == 1 })
            #expect(await settled(client))
            #expect(outcomes.value.count == 1 && outcomes.value.first?.failure?.isCancelled == true, "\(outcomes.value)")
        }
    }

    /// Cancels from other threads racing the answers as they are let go: whichever wins, each send
    /// ends once, its completion and its observers agree, and a success is whole. A quarter are
    /// cancelled before the answers go (they must end `cancelled`), a quarter never (they must
    /// succeed), and half are cancelled from four threads as the server lets every answer go at once.
    @Test(arguments: TransportUnderTest.network) func cancelsRacingCompletionsEachEndOnceAndAgree(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.maximumConnectionsPerHost = 8 }
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            let sends = 200
            let outcomes = Box([Int: [String]]())
            var handles: [RequestHandle] = []
            for n in 0..<sends {
                let handle = client.send(Get("/concurrent/race?hold=release&i=\(n)")) { result in
                    let text: String
                    switch result {
                    case .success(let response): text = response.json["index"].int == n ? "succeeded" : "wrong body"
                    case .failure(let error): text = error.isCancelled ? "cancelled" : "failed: \(error)"
                    }
                    outcomes.mutate { $0[n, default: []].append(text) }
                }
                handles.append(handle)
            }
            #expect(await eventually(timeout: 30) { server.hits("/concurrent/race") == 8 }, "eight answers held, the rest queued")
            for (n, handle) in handles.enumerated() where n % 4 == 0 { handle.cancel() }
            let racing = handles.enumerated().filter { $0.offset % 4 == 1 || $0.offset % 4 == 2 }.map(\.element)
            DispatchQueue.concurrentPerform(iterations: 5) { lane in
                if lane == 4 {
                    server.release("race")
                    return
                }
                for (index, handle) in racing.enumerated() where index % 4 == lane {
                    for _ in 0..<(index * 37 % 2_000) { _ = index.hashValue }
                    handle.cancel()
                }
            }
            #expect(await eventually(timeout: 30) { outcomes.value.count == sends })
            #expect(await settled(client))
            let ended = outcomes.value
            let bySend = Dictionary(grouping: log.events, by: \.sendID)
            for (n, handle) in handles.enumerated() {
                let mine = ended[n] ?? []
                switch n % 4 {
                case 0: #expect(mine == ["cancelled"], "send \(n), cancelled before the answers went: \(mine)")
                case 3: #expect(mine == ["succeeded"], "send \(n), never cancelled: \(mine)")
                default: #expect(mine == ["cancelled"] || mine == ["succeeded"], "send \(n), raced: \(mine)")
                }
                let kinds = (bySend[handle.id] ?? []).map { Listener.name($0) }
                #expect(kinds == ["started"] + mine, "send \(n): observers \(kinds), completion \(mine)")
            }
        }
    }
}

/// A one-shot gate for async code, whose waiters can be counted.
actor AsyncGate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// How many wait for the gate.
    var waiting: Int { waiters.count }

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
