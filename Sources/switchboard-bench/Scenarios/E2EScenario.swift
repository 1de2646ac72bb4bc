import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `GET /small`: a 40-byte JSON object.
struct SmallGet: Request {
    var path: String { "/small" }
}

/// Counts a run's requests: hands out request numbers to the workers and counts failures.
final class RunCounter: Sendable {
    private let next = AtomicCounter()
    private let failed = AtomicCounter()
    let total: Int
    init(total: Int) { self.total = total }
    /// Whether another request is to be sent.
    func take() -> Bool { next.increment() < total }
    func fail() { failed.increment() }
    var failures: Int { failed.value }
}

/// An observer that counts terminal events (the "one observer" of the `send` variant).
final class TerminalCounter: Sendable {
    private let count = AtomicCounter()
    func changed(_ event: RequestEvent<SmallGet>) {
        if event.isTerminal { count.increment() }
    }
    var value: Int { count.value }
}

/// End to end: small JSON GETs at concurrency 1, 8 and 64 against the loopback server in another
/// process. Switchboard (`send` with one observer and a closure, both on the main queue; and
/// `response(for:)`) against raw `URLSession.data(for:)` + `JSONSerialization`, same session settings;
/// and a bare delegate session, the floor for any client that must use the session delegate.
enum E2EScenario {
    typealias Variant = (name: String, run: @Sendable (RunCounter, Int) async -> Void)

    static func run(quick: Bool) async throws -> ScenarioResult {
        // SWITCHBOARD_BENCH_SERVER=nginx serves /small from nginx instead of the loopback server.
        let server: (baseURL: URL, stop: () -> Void)
        if ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_SERVER"] == "nginx" {
            let nginx = try NginxServer()
            server = (nginx.baseURL, nginx.stop)
        } else {
            let loopback = try ServerProcess()
            server = (loopback.baseURL, loopback.stop)
        }
        defer { server.stop() }
        defer { CurlCClient.remove() }
        if (try? TransportFactory.curlIfAvailable()) != nil, case .failure(let why) = CurlCClient.binary {
            print("the C libcurl client's rows are left out: \(why)")
        }
        // SWITCHBOARD_BENCH_REQUESTS overrides the count (for profiling runs).
        let requests = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_REQUESTS"].flatMap { Int($0) } ?? (quick ? 200 : 5000)
        guard requests > 0 else { throw BenchError("SWITCHBOARD_BENCH_REQUESTS: a round needs at least one request") }
        // SWITCHBOARD_BENCH_ROUNDS overrides the number of rounds (for A/B runs on a noisy machine).
        let rounds = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_ROUNDS"].flatMap { Int($0) } ?? (quick ? 1 : 5)
        // Each client's round runs as slices, the clients taking turns slice by slice, so that a
        // neighbour's load that comes and goes within a round falls on every client alike (the C
        // client and curl's command line, separate processes, run whole once a round).
        let slicesAsked = try chosenSlices()
        var slicesByLevel: [String] = []
        var figures: [Figure] = []

        // SWITCHBOARD_BENCH_CONCURRENCY=<n>,<n> runs only those levels.
        let levels = try concurrencyLevels(default: [1, 8, 64])
        for concurrency in levels {
            let slices = sliceCount(chosen: slicesAsked, requests: requests, concurrency: concurrency, quick: quick)
            slicesByLevel.append("\(slices) at c=\(concurrency)")
            let settings = URLSessionConfiguration.ephemeral
            settings.httpMaximumConnectionsPerHost = concurrency
            settings.timeoutIntervalForRequest = 30
            settings.urlCache = nil
            settings.requestCachePolicy = .reloadIgnoringLocalCacheData
            let session = URLSession(configuration: settings)
            let url = server.baseURL.appendingPathComponent("small")
            let rawRequest = {
                var request = URLRequest(url: url)
                request.setValue("application/json", forHTTPHeaderField: "Accept")
                return request
            }()
            // One raw request: `data(for:)` and JSONSerialization; the object's key count, or nil on failure.
            let fetchRaw: @Sendable () async -> Int? = {
                guard let (data, response) = try? await session.data(for: rawRequest),
                    (response as? HTTPURLResponse)?.statusCode == 200,
                    let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
                else { return nil }
                return object.count
            }
            let raw: Variant = (
                "URLSession",
                { counter, _ in
                    while counter.take() {
                        guard let count = await fetchRaw() else { counter.fail(); continue }
                        blackHole &+= count
                    }
                }
            )

            // The same, handing each result to the main queue before the next request: what delivering
            // to a main-queue observer costs by itself, the reference for `send + observer`.
            let rawMain: Variant = (
                "URLSession + main queue",
                { counter, _ in
                    while counter.take() {
                        guard let count = await fetchRaw() else { counter.fail(); continue }
                        await withCheckedContinuation { continuation in
                            DispatchQueue.main.async {
                                blackHole &+= count
                                continuation.resume()
                            }
                        }
                    }
                }
            )

            let bareClient = BareDelegateClient(configuration: settings)
            let bare: Variant = (
                "bare delegate session",
                { counter, _ in
                    while counter.take() {
                        guard let data = await bareClient.data(for: rawRequest),
                            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                        else { counter.fail(); continue }
                        blackHole &+= object.count
                    }
                }
            )

            // The floor with what a main-queue observer and closure cost by themselves: the bare delegate
            // session, plus the two hops to the main queue that `send` + observer makes (`started`,
            // posted as the transfer begins; the terminal event and the closure, in one block after it).
            let bareMain: Variant = (
                "bare delegate + main-queue hops",
                { counter, _ in
                    while counter.take() {
                        DispatchQueue.main.async { blackHole &+= 1 }
                        guard let data = await bareClient.data(for: rawRequest),
                            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                        else { counter.fail(); continue }
                        let count = object.count
                        await withCheckedContinuation { continuation in
                            DispatchQueue.main.async {
                                blackHole &+= count
                                continuation.resume()
                            }
                        }
                    }
                }
            )

            let configuration = Configuration {
                $0.baseURL = server.baseURL
                $0.maximumConnectionsPerHost = concurrency
                $0.idleTimeout = 30
                // Every send makes its own request, as the baselines' do (the workers send one URL, which
                // coalescing would merge; the coalescing scenario measures that).
                $0.coalescesDuplicates = false
            }
            let observed = Dispatcher(configuration: configuration)
            let observer = TerminalCounter()
            observed.addObserver(observer, for: SmallGet.self, on: .main) { $0.changed($1) }
            let send: Variant = (
                "send + observer",
                { counter, _ in
                    while counter.take() {
                        let ok = await withCheckedContinuation { continuation in
                            observed.send(SmallGet()) { result in continuation.resume(returning: (try? result.get())?.json["ok"] == true) }
                        }
                        if !ok { counter.fail() }
                    }
                }
            )
            let awaited = Dispatcher(configuration: configuration)
            let async: Variant = (
                "response(for:)",
                { counter, _ in
                    while counter.take() {
                        do {
                            let response = try await awaited.response(for: SmallGet())
                            if response.json["ok"] != true { counter.fail() }
                        } catch {
                            counter.fail()
                        }
                    }
                }
            )

            // The same two through the libcurl transport, where libcurl loads.
            var curlVariants: [Variant] = []
            if let curl = try? TransportFactory.curlIfAvailable() {
                var curlConfiguration = configuration
                curlConfiguration.transport = curl
                let curlObserved = Dispatcher(configuration: curlConfiguration)
                curlObserved.addObserver(observer, for: SmallGet.self, on: .main) { $0.changed($1) }
                curlVariants.append(
                    (
                        "libcurl: send + observer",
                        { counter, _ in
                            while counter.take() {
                                let ok = await withCheckedContinuation { continuation in
                                    curlObserved.send(SmallGet()) { result in continuation.resume(returning: (try? result.get())?.json["ok"] == true) }
                                }
                                if !ok { counter.fail() }
                            }
                        }
                    ))
                // The transport alone, without the dispatcher: what libcurl and the transport cost.
                #if canImport(Glibc)
                if let bareCurl = try? CurlTransport(configuration: curlConfiguration) {
                    curlVariants.append(
                        (
                            "libcurl transport alone",
                            { counter, _ in
                                while counter.take() {
                                    let ok = await withCheckedContinuation { continuation in
                                        _ = bareCurl.perform(rawRequest, options: TransferOptions(timeout: 30)) { result in
                                            let object = (try? result.get()).flatMap { try? JSONSerialization.jsonObject(with: $0.data) as? [String: Any] }
                                            continuation.resume(returning: object?["ok"] as? Bool == true)
                                        }
                                    }
                                    if !ok { counter.fail() }
                                }
                            }
                        ))
                }
                #endif
                let curlAwaited = Dispatcher(configuration: curlConfiguration)
                curlVariants.append(
                    (
                        "libcurl: response(for:)",
                        { counter, _ in
                            while counter.take() {
                                let response = try? await curlAwaited.response(for: SmallGet())
                                if response?.json["ok"] != true { counter.fail() }
                            }
                        }
                    ))
            }

            // SWITCHBOARD_BENCH_ONLY=<variant name> runs one client alone (for profiling runs).
            let only = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_ONLY"]
            if let only {
                let chosen = ([raw, rawMain, bare, bareMain, send, async] + curlVariants).filter { $0.name == only }
                guard !chosen.isEmpty else { throw BenchError("SWITCHBOARD_BENCH_ONLY: no client named \(only)") }
                for variant in chosen {
                    let run = try await measure(variant, requests: requests, concurrency: concurrency)
                    let cpu = (run.cpu * 10).rounded() / 10
                    let switches = (run.switches * 100).rounded() / 100
                    print("\(variant.name), c=\(concurrency): \(Int(run.rate)) req/s, \(cpu) CPU µs/req, \(switches) switches/req")
                }
                session.invalidateAndCancel()
                bareClient.session.invalidateAndCancel()
                continue
            }
            // SWITCHBOARD_BENCH_CLIENTS=<name>,<name> compares only those clients with URLSession.
            let names = try environmentList("SWITCHBOARD_BENCH_CLIENTS")
            let all = [raw, rawMain, bare, bareMain, send, async] + curlVariants
            if let unknown = names?.first(where: { name in !all.contains { $0.name == name } }) {
                throw BenchError("SWITCHBOARD_BENCH_CLIENTS: no client named \(unknown); choose from \(all.map(\.name).joined(separator: ", "))")
            }
            let clients = all.filter { $0.name == "URLSession" || names?.contains($0.name) ?? true }
            // Warm up every client (connections, lazily created sessions).
            for variant in clients {
                _ = try await measure(variant, requests: quick ? 20 : 300, concurrency: concurrency)
            }
            var samples: [String: (rate: [Double], cpu: [Double], switches: [Double])] = [:]
            // Each client's CPU a request in every slice of every round, in the same order for all.
            var sliceCPU: [String: [Double]] = [:]
            for round in 0..<rounds {
                // Each round starts with the next client.
                let runs = try await measureInSlices(clients, rotatedBy: round, requests: requests, slices: slices, concurrency: concurrency)
                for (variant, run) in zip(clients, runs) {
                    samples[variant.name, default: ([], [], [])].rate.append(run.rate)
                    samples[variant.name, default: ([], [], [])].cpu.append(run.cpu)
                    samples[variant.name, default: ([], [], [])].switches.append(run.switches)
                    sliceCPU[variant.name, default: []].append(contentsOf: run.sliceCPU)
                }
                // The command-line tool on the same server: an outside reference for the libcurl rows.
                if !curlVariants.isEmpty, CurlCommandLine.isAvailable, names == nil {
                    let run = try CurlCommandLine.measure(url, requests: requests, concurrency: concurrency)
                    samples["curl --parallel", default: ([], [], [])].rate.append(run.rate)
                    samples["curl --parallel", default: ([], [], [])].cpu.append(run.cpu)
                    samples["curl --parallel", default: ([], [], [])].switches.append(run.switches)
                }
                // The C program driving libcurl as the transport does: the libcurl rows' baseline.
                if !curlVariants.isEmpty, names == nil, case .success = CurlCClient.binary {
                    let run = try CurlCClient.measure(url, requests: requests, concurrency: concurrency)
                    samples["C libcurl client", default: ([], [], [])].rate.append(run.rate)
                    samples["C libcurl client", default: ([], [], [])].cpu.append(run.cpu)
                    samples["C libcurl client", default: ([], [], [])].switches.append(run.switches)
                }
            }
            session.invalidateAndCancel()
            bareClient.session.invalidateAndCancel()
            let baseline = samples["URLSession"]!
            if let candidate = samples["send + observer"], let reference = samples["URLSession + main queue"] {
                figures.append(
                    Figure(
                        name: "send + observer vs the main-queue reference, c=\(concurrency)", unit: "CPU µs/req", candidate: candidate.cpu, baseline: reference.cpu,
                        baselineName: "URLSession + main queue"))
            }
            // The floor: a bare delegate session, what any client that needs the session delegate pays.
            if let floor = samples["bare delegate session"] {
                if let candidate = samples["response(for:)"] {
                    figures.append(
                        Figure(
                            name: "response(for:) vs the floor, c=\(concurrency)", unit: "CPU µs/req", candidate: candidate.cpu, baseline: floor.cpu,
                            baselineName: "bare delegate session", target: "≤ 1.05×"))
                }
                if let candidate = samples["send + observer"] {
                    figures.append(
                        Figure(
                            name: "send + observer vs the floor, c=\(concurrency)", unit: "CPU µs/req", candidate: candidate.cpu, baseline: floor.cpu,
                            baselineName: "bare delegate session", target: "≤ 1.10×"))
                }
            }
            // The same ratios slice by slice: each slice's CPU against the floor's in that slice (run next
            // to it), the median over every slice of every round. A neighbour's burst falls on a few
            // slices and moves this median little, where it moves a whole round's sum. No target: a
            // second estimate of the rows above, not a replacement.
            if let floor = sliceCPU["bare delegate session"], slices > 1 {
                for name in ["response(for:)", "send + observer"] {
                    guard let candidate = sliceCPU[name] else { continue }
                    figures.append(
                        Figure(
                            name: "\(name) vs the floor, slice by slice, c=\(concurrency)", unit: "CPU µs/req", candidate: candidate, baseline: floor,
                            baselineName: "bare delegate session"))
                }
            }
            // The same with the floor paying the observer's two main-queue hops too: what the
            // dispatcher adds to them.
            if let floor = samples["bare delegate + main-queue hops"], let candidate = samples["send + observer"] {
                figures.append(
                    Figure(
                        name: "send + observer vs the floor with its main-queue hops, c=\(concurrency)", unit: "CPU µs/req", candidate: candidate.cpu,
                        baseline: floor.cpu, baselineName: "bare delegate + main-queue hops", target: "≤ 1.10×"))
            }
            for name in [
                "URLSession + main queue", "bare delegate session", "bare delegate + main-queue hops", "send + observer", "response(for:)", "libcurl transport alone",
                "libcurl: send + observer",
                "libcurl: response(for:)", "curl --parallel", "C libcurl client",
            ] {
                guard let candidate = samples[name] else { continue }
                // The targets are Switchboard's; the other rows are references. The libcurl transport's
                // targets (issue #14) hold at concurrency 8 and 64.
                let isSwitchboard = name == "send + observer" || name == "response(for:)"
                let isCurl = name.hasPrefix("libcurl") && concurrency >= 8
                let rateTarget = isSwitchboard ? "≥ 0.95×" : isCurl ? "≥ 8×" : nil
                let cpuTarget = isSwitchboard ? "≤ 1.10×" : isCurl ? "≤ 0.15×" : nil
                figures.append(
                    Figure(name: "\(name), c=\(concurrency)", unit: "req/s", candidate: candidate.rate, baseline: baseline.rate, baselineName: "URLSession", target: rateTarget))
                figures.append(
                    Figure(name: "\(name), c=\(concurrency)", unit: "CPU µs/req", candidate: candidate.cpu, baseline: baseline.cpu, baselineName: "URLSession", target: cpuTarget))
                figures.append(
                    Figure(name: "\(name), c=\(concurrency)", unit: "switches/req", candidate: candidate.switches, baseline: baseline.switches, baselineName: "URLSession"))
            }
            // The libcurl transport against the C client (issue #27): at c=8 and c=64, response(for:)
            // at least half its rate and at most 2.5× its CPU, and within 1.10× of send + observer's CPU.
            if let c = samples["C libcurl client"] {
                for name in ["libcurl transport alone", "libcurl: send + observer", "libcurl: response(for:)"] {
                    guard let candidate = samples[name] else { continue }
                    let targeted = name == "libcurl: response(for:)" && concurrency >= 8
                    figures.append(
                        Figure(
                            name: "\(name) vs C, c=\(concurrency)", unit: "req/s", candidate: candidate.rate, baseline: c.rate, baselineName: "C libcurl client",
                            target: targeted ? "≥ 0.5×" : nil))
                    figures.append(
                        Figure(
                            name: "\(name) vs C, c=\(concurrency)", unit: "CPU µs/req", candidate: candidate.cpu, baseline: c.cpu, baselineName: "C libcurl client",
                            target: targeted ? "≤ 2.5×" : nil))
                }
            }
            if let awaited = samples["libcurl: response(for:)"], let observed = samples["libcurl: send + observer"] {
                figures.append(
                    Figure(
                        name: "libcurl: response(for:) vs send + observer, c=\(concurrency)", unit: "CPU µs/req", candidate: awaited.cpu, baseline: observed.cpu,
                        baselineName: "libcurl: send + observer", target: concurrency >= 8 ? "≤ 1.10×" : nil))
            }
            blackHole &+= observer.value
        }
        return ScenarioResult(
            scenario: "e2e",
            note:
                "\(requests) GET /small per client per round after a warm-up, \(rounds) rounds, clients taking turns in slices (\(slicesByLevel.joined(separator: ", ")) a round; the C client and curl whole); server in another process; CPU is this process's user+system time (getrusage).",
            figures: figures
        )
    }
}
