import Dispatch
import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Switchboard's own cost per send, without a network: a transport that answers at once (on its own
/// serial queue, with a prebuilt 40-byte JSON response) under `response(for:)` and `send` with a closure,
/// against the same transport awaited directly. The difference is what building, the operation's
/// state machine, validation, decoding and delivery cost per request. Coalescing is on (the default);
/// each worker sends its own URL, so it looks for a shared transfer every time and never finds one.
enum PipelineScenario {
    /// `/small` with the worker's number: one URL per worker.
    struct WorkerGet: Request {
        let worker: Int
        var path: String { "/small?w=\(worker)" }
    }

    /// The same, decoded into a model: a typed request's response is checked off the transport's queue.
    struct TypedWorkerGet: Request {
        struct Small: Decodable, Sendable {
            let ok: Bool
            let id: Int
            let name: String
        }
        typealias Value = Small
        let worker: Int
        var path: String { "/small?w=\(worker)" }
    }

    static func run(quick: Bool) async throws -> ScenarioResult {
        let sends = quick ? 2000 : 50_000
        let rounds = quick ? 1 : 7
        let transport = InstantTransport()
        let configuration = Configuration {
            $0.baseURL = URL(string: "http://127.0.0.1:9")
            $0.transport = .using(transport)
            $0.callbackQueue = .immediate
        }
        let client = Dispatcher(configuration: configuration)
        let url = URL(string: "http://127.0.0.1:9/small")!
        let bare: @Sendable (Int) async -> Bool = { _ in
            await withCheckedContinuation { continuation in
                _ = transport.perform(URLRequest(url: url), options: TransferOptions(timeout: 60)) { result in
                    continuation.resume(returning: (try? result.get())?.data.isEmpty == false)
                }
            }
        }
        let awaited: @Sendable (Int) async -> Bool = { worker in
            (try? await client.response(for: WorkerGet(worker: worker)))?.json["ok"] == true
        }
        let typed: @Sendable (Int) async -> Bool = { worker in
            (try? await client.response(for: TypedWorkerGet(worker: worker)))?.value.ok == true
        }
        let sent: @Sendable (Int) async -> Bool = { worker in
            await withCheckedContinuation { continuation in
                client.send(WorkerGet(worker: worker)) { continuation.resume(returning: (try? $0.get())?.json["ok"] == true) }
            }
        }
        // SWITCHBOARD_BENCH_ONLY=<client> runs one client alone, SWITCHBOARD_BENCH_REQUESTS sends at each
        // level (for `perf record`, or instruction counts under callgrind: the difference of two counts).
        if let only = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_ONLY"] {
            let clients = [("transport alone", bare), ("response(for:)", awaited), ("typed response(for:)", typed), ("send + closure", sent)]
            guard let body = clients.first(where: { $0.0 == only })?.1 else { throw BenchError("SWITCHBOARD_BENCH_ONLY: no client named \(only)") }
            let count = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_REQUESTS"].flatMap { Int($0) } ?? sends
            for concurrency in try E2EScenario.concurrencyLevels(default: [1, 8]) {
                let run = try await measure(body, sends: count, concurrency: concurrency)
                print("\(only), c=\(concurrency): \((run.cpu * 10).rounded() / 10) CPU µs/send")
            }
            return ScenarioResult(scenario: "pipeline", note: "one client alone: \(only)", figures: [])
        }
        var figures: [Figure] = []
        for concurrency in try E2EScenario.concurrencyLevels(default: [1, 8]) {
            var samples: [String: (cpu: [Double], switches: [Double])] = [:]
            for round in 0...rounds {
                for (name, body) in [("transport alone", bare), ("response(for:)", awaited), ("typed response(for:)", typed), ("send + closure", sent)] {
                    let run = try await measure(body, sends: sends, concurrency: concurrency)
                    if round > 0 {  // round 0 warms up
                        samples[name, default: ([], [])].cpu.append(run.cpu)
                        samples[name, default: ([], [])].switches.append(run.switches)
                    }
                }
            }
            for name in ["response(for:)", "typed response(for:)", "send + closure"] {
                figures.append(
                    Figure(
                        name: "\(name), c=\(concurrency)", unit: "CPU µs/send", candidate: samples[name]!.cpu, baseline: samples["transport alone"]!.cpu,
                        baselineName: "transport alone"))
                figures.append(
                    Figure(
                        name: "\(name), c=\(concurrency)", unit: "switches/send", candidate: samples[name]!.switches, baseline: samples["transport alone"]!.switches,
                        baselineName: "transport alone"))
            }
        }
        return ScenarioResult(
            scenario: "pipeline",
            note: "\(sends) sends per client per round through a transport that answers at once, \(rounds) rounds after a warm-up, interleaved: Switchboard's own CPU per send.",
            figures: figures)
    }

    /// CPU µs and context switches per send of `sends` sends with `concurrency` workers.
    static func measure(_ body: @escaping @Sendable (Int) async -> Bool, sends: Int, concurrency: Int) async throws -> (cpu: Double, switches: Double) {
        let counter = RunCounter(total: sends)
        let start = processCPUMicroseconds()
        let switchesStart = processContextSwitches()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    while counter.take() {
                        if await !body(worker) { counter.fail() }
                    }
                }
            }
        }
        guard counter.failures == 0 else { throw BenchError("pipeline: \(counter.failures) sends failed") }
        return ((processCPUMicroseconds() - start) / Double(sends), (processContextSwitches() - switchesStart) / Double(sends))
    }
}

/// Answers every transfer at once, on its serial queue, with the same small JSON response.
final class InstantTransport: Transport {
    private let queue = DispatchQueue(label: "bench.instant-transport")
    private let body = Data(#"{"ok":true,"id":12345,"name":"small"}"#.utf8)

    func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let url = request.urlRequest.url!
        let body = body
        queue.async {
            let head = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json", "Content-Length": "\(body.count)"])!
            callbacks.completion(.success(TransportResponse(httpResponse: head, data: body, timing: Timing(start: Date(), timeToFirstByte: 0, duration: 0))))
        }
        return InstantTask()
    }

    struct InstantTask: TransportTask { func cancel() {} }
}
