import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `GET <path>` with a deadline, for the soak's mixed outcomes; `tag` is the send's number in the run.
struct SoakGet: Request {
    var path: String
    var timeout: TimeInterval?
    var tag = 0
    var retries = false
    /// Shares a transfer with identical sends in flight (the others don't, as the bare client can't).
    var shares = false
    /// Answered from the response cache when a fresh entry is there.
    var cached = false

    var coalescesDuplicates: Bool { shares }
    var cachePolicy: CachePolicy? { cached ? CachePolicy(timeToLive: 3600) : nil }

    var pipeline: RequestPipeline {
        guard retries else { return RequestPipeline { $0.retryPolicy = RetryPolicy.none } }
        return RequestPipeline { $0.retryPolicy = RetryPolicy(maximumAttempts: 2, initialDelay: 0.05, maximumDelay: 0.05, jitter: 0) }
    }
}

/// A long run with every kind of outcome, observers joining and leaving throughout, checked send by
/// send; and its memory against a bare URLSession with the same mix in the same run.
///
/// The mix, by send number: successes, 404, 500, malformed JSON, a 0.2 s deadline against a 2 s
/// answer, a 503 retried once, a cancel 0–50 ms into a 0.3 s answer, GETs answered from the cache,
/// and identical GETs that share transfers. Two observers stay
/// registered throughout (one called immediately, one on a serial queue) and must see every send's
/// `started` and exactly one terminal event, matching its completion; a churning task keeps adding
/// and removing observers. No send may take more than its attempts' deadlines and waits plus a second.
enum SoakScenario {
    static let deadline: TimeInterval = 0.2
    static let timeout: TimeInterval = 5

    /// The request for send `n`, its allowed duration, and after how long to cancel it (if at all).
    static func plan(_ n: Int, run: String) -> (request: SoakGet, allowed: TimeInterval, cancelAfter: TimeInterval?) {
        switch n % 10 {
        case 0, 1: (SoakGet(path: "/small", timeout: timeout, tag: n), timeout, nil)
        case 2: (SoakGet(path: "/small?entry=\(n / 10 % 50)", timeout: timeout, tag: n, cached: true), timeout, nil)
        case 3: (SoakGet(path: "/nothing-here", timeout: timeout, tag: n), timeout, nil)
        case 4: (SoakGet(path: "/status/500", timeout: timeout, tag: n), timeout, nil)
        case 5: (SoakGet(path: "/malformed-json", timeout: timeout, tag: n), timeout, nil)
        case 6: (SoakGet(path: "/delay/2000", timeout: deadline, tag: n), deadline, nil)
        case 7: (SoakGet(path: "/flaky/\(run)-\(n)?failures=1", timeout: timeout, tag: n, retries: true), 2 * timeout + 0.05, nil)
        case 8: (SoakGet(path: "/delay/300", timeout: timeout, tag: n), timeout, Double(n % 51) / 1000)
        default: (SoakGet(path: "/delay/100?share=\(run)-\(n / 40)", timeout: timeout, tag: n, shares: true), timeout, nil)
        }
    }

    static func run(quick: Bool) async throws -> ScenarioResult {
        try SoakLedger.selfCheck()
        let server = try ServerProcess()
        defer { server.stop() }
        let requests = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_SOAK_REQUESTS"].flatMap { Int($0) } ?? (quick ? 5000 : 100_000)
        let concurrency = 64
        let run = String(UUID().uuidString.prefix(8))

        let settings = URLSessionConfiguration.ephemeral
        settings.httpMaximumConnectionsPerHost = concurrency
        settings.urlCache = nil
        let session = URLSession(configuration: settings)
        let base = server.baseURL
        let raw: @Sendable (Int) async -> Void = { n in
            let (request, _, cancelAfter) = plan(n, run: "raw-\(run)")
            var built = URLRequest(url: URL(string: base.absoluteString + request.path)!)
            built.timeoutInterval = request.timeout ?? timeout
            let urlRequest = built
            let task = Task { _ = try? await session.data(for: urlRequest) }
            if let cancelAfter {
                try? await Task.sleep(nanoseconds: UInt64(cancelAfter * 1e9))
                task.cancel()
            }
            await task.value
        }

        let rounds = quick ? 1 : 2
        let ledger = SoakLedger(capacity: requests * rounds)
        let client = Dispatcher(
            configuration: Configuration {
                $0.baseURL = server.baseURL
                $0.maximumConnectionsPerHost = concurrency
                $0.callbackQueue = .immediate
                // In memory: 50 entries, hit by one send in ten after the first of each.
                $0.cache = ResponseCache(directory: nil, logger: nil)
            })
        let cacheHits = Locked(0)
        let immediate = ChurnObserver(), queued = ChurnObserver()
        let observerQueue = DispatchQueue(label: "soak.observer")
        client.addObserver(immediate, for: SoakGet.self, on: .immediate) { _, event in ledger.saw(event, by: 0) }
        client.addObserver(queued, for: SoakGet.self, on: .queue(observerQueue)) { _, event in ledger.saw(event, by: 1) }
        let ours: @Sendable (Int) async -> Void = { n in
            let (request, allowed, cancelAfter) = plan(n, run: run)
            ledger.started(n, allowed: allowed)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let handle = client.send(request) { result in
                    let outcome: UInt8
                    switch result {
                    case .success(let response):
                        outcome = 2
                        if response.source == .cache { cacheHits.withLock { $0 += 1 } }
                    case .failure(.cancelled): outcome = 4
                    case .failure: outcome = 3
                    }
                    ledger.completed(n, outcome: outcome)
                    continuation.resume()
                }
                if let cancelAfter {
                    DispatchQueue.global().asyncAfter(deadline: .now() + cancelAfter) { handle.cancel() }
                }
            }
        }

        // Observers join and leave while the sends run.
        let churning = Locked(true)
        let churn = Thread {
            var tokens: [ObservationToken] = []
            var observers: [ChurnObserver] = []
            var step = 0
            while churning.withLock({ $0 }) {
                let observer = ChurnObserver()
                let queue: CallbackQueue = step % 2 == 0 ? .immediate : .queue(observerQueue)
                tokens.append(client.addObserver(observer, for: SoakGet.self, on: queue) { _, _ in ledger.churned() })
                observers.append(observer)
                if tokens.count > 8 { tokens.removeFirst().cancel() }
                if observers.count > 12 { observers.removeFirst() }  // some leave by deallocation
                step += 1
                Thread.sleep(forTimeInterval: 0.001)
            }
            tokens.forEach { $0.cancel() }
        }

        // Warm both up, so first-use allocations don't count as growth.
        try await drive(raw, requests: min(200, requests), from: 1_000_000_000, concurrency: concurrency)
        try await drive(ours, requests: min(200, requests), from: 1_000_000_000, concurrency: concurrency)
        churn.start()
        var rawGrowth: [Double] = [], oursGrowth: [Double] = []
        var checked = 0
        var sharedTransfers = 0
        for round in 0..<rounds {
            let beforeRaw = residentMiB()
            try await drive(raw, requests: requests, from: 0, concurrency: concurrency)
            rawGrowth.append(residentMiB() - beforeRaw)
            let beforeOurs = residentMiB()
            let first = round * requests
            let sharedBefore = try await hits("/delay/100", on: server.baseURL)
            try await drive(ours, requests: requests, from: first, concurrency: concurrency)
            sharedTransfers += try await hits("/delay/100", on: server.baseURL) - sharedBefore
            observerQueue.sync {}  // deliveries still queued are the observers' backlog, not growth
            oursGrowth.append(residentMiB() - beforeOurs)
            checked += requests
        }
        churning.withLock { $0 = false }
        observerQueue.sync {}  // the queued observer has seen everything posted
        guard client.inFlightCount == 0 else {
            throw BenchError("soak: \(client.inFlightCount) sends never ended")
        }
        let problems = ledger.violations(0..<checked) { plan($0, run: run).request.path }
        guard problems.isEmpty else {
            throw BenchError("soak: broken promises:\n" + problems.joined(separator: "\n"))
        }
        let sharing = (0..<checked).filter { plan($0, run: run).request.shares }.count
        let hitCount = cacheHits.withLock { $0 }
        // The mix must really exercise both: most cached sends hit, and duplicates share transfers.
        guard hitCount > checked / 20, sharedTransfers < sharing else {
            throw BenchError(
                "soak: \(hitCount) cache hits in \(checked) sends, \(sharedTransfers) transfers for \(sharing) sharing sends: the mix did not exercise the cache and coalescing")
        }
        return ScenarioResult(
            scenario: "soak",
            note:
                "\(requests) sends per round at concurrency \(concurrency), \(rounds) rounds: successes, 404, 500, malformed JSON, a \(deadline) s deadline against a 2 s answer, a 503 retried once, a cancel 0–50 ms in, cached GETs (\(hitCount) cache hits), identical GETs coalesced (\(sharing) sends, \(sharedTransfers) transfers); two observers throughout and observers joining and leaving (\(ledger.churnCount) churn deliveries). Checked per send: one completion, `started` then exactly one terminal event at both permanent observers matching it, no send over its deadlines by 1 s: \(checked) sends, no violation. Memory: resident growth over each client's run (/proc/self/statm), after a warm-up, against a bare URLSession with the same mix.",
            figures: [
                Figure(name: "resident memory growth", unit: "MiB", candidate: oursGrowth, baseline: rawGrowth, baselineName: "URLSession", target: "≤ URLSession + 2 MiB")
            ]
        )
    }

    /// How many requests to `path` reached the server so far.
    private static func hits(_ path: String, on base: URL) async throws -> Int {
        var components = URLComponents(url: base.appendingPathComponent("hits"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "path", value: path)]
        let (data, _) = try await URLSession.shared.data(from: components.url!)
        return (try JSON.parse(data))["hits"].int ?? 0
    }

    /// Runs `requests` calls of `work` with `concurrency` workers, numbered from `from`.
    private static func drive(_ work: @escaping @Sendable (Int) async -> Void, requests: Int, from: Int, concurrency: Int) async throws {
        let counter = RunCounter(total: requests)
        let numbers = NumberSource(from: from)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while counter.take() { await work(numbers.next()) }
                }
            }
        }
    }

    /// The resident set size of this process in MiB (0 where /proc is missing).
    static func residentMiB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}

/// Hands out 0, 1, 2… to concurrent workers.
final class NumberSource: Sendable {
    private let value: Locked<Int>
    init(from: Int = 0) { value = Locked(from) }
    func next() -> Int {
        value.withLock { value in
            defer { value += 1 }; return value
        }
    }
}
