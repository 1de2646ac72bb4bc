import Foundation

/// How the e2e scenario runs its clients: the levels and clients the environment names, and the
/// measurement of one client, or of every client taking turns in slices.
extension E2EScenario {
    /// The concurrency levels `SWITCHBOARD_BENCH_CONCURRENCY=<n>,<n>` asks for, or `levels` when it is unset.
    static func concurrencyLevels(default levels: [Int]) throws -> [Int] {
        try environmentList("SWITCHBOARD_BENCH_CONCURRENCY").map { names in
            try names.map { name in
                guard let level = Int(name), level > 0 else { throw BenchError("SWITCHBOARD_BENCH_CONCURRENCY: \(name) is not a concurrency level") }
                return level
            }
        } ?? levels
    }

    /// A comma-separated list from the environment, each item trimmed; `nil` when the variable is unset.
    static func environmentList(_ variable: String) throws -> [String]? {
        guard let value = ProcessInfo.processInfo.environment[variable] else { return nil }
        let items = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !items.isEmpty else { throw BenchError("\(variable) is set but lists nothing") }
        return items
    }

    /// How many slices a round of `requests` at `concurrency` runs in: `chosen` (SWITCHBOARD_BENCH_SLICES)
    /// or 10, but never so many that a slice holds under 8 requests per worker (a slice ends with its
    /// workers running out of requests one by one); 1 with `--quick`.
    static func sliceCount(chosen: Int?, requests: Int, concurrency: Int, quick: Bool) -> Int {
        guard !quick else { return 1 }
        return max(1, min(chosen ?? 10, requests / (8 * concurrency)))
    }

    /// `SWITCHBOARD_BENCH_SLICES`, or `nil` when it is unset.
    static func chosenSlices() throws -> Int? {
        guard let value = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_SLICES"] else { return nil }
        guard let count = Int(value), count > 0 else { throw BenchError("SWITCHBOARD_BENCH_SLICES: \(value) is not a number of slices") }
        return count
    }

    /// One round of every client in `clients`: `requests` each, in `slices` turns of near-equal size.
    /// The clients take their turns in order from client `rotatedBy` (modulo their count) in even
    /// slices, in the reverse order in odd ones, so that no client always runs right after the same
    /// other one (a run leaves the machine warmer or busier for the next, and CPU is the process's).
    /// Returns each client's figures over its whole round, and its CPU µs a request in each slice, in
    /// the order of `clients`.
    static func measureInSlices(
        _ clients: [Variant], rotatedBy first: Int, requests: Int, slices: Int, concurrency: Int
    ) async throws -> [(rate: Double, cpu: Double, switches: Double, sliceCPU: [Double])] {
        precondition(requests > 0 && slices > 0, "a round has requests and slices")
        var totals = Array(repeating: (seconds: 0.0, cpu: 0.0, switches: 0.0, sliceCPU: [Double]()), count: clients.count)
        for slice in 0..<slices {
            let size = requests * (slice + 1) / slices - requests * slice / slices
            guard size > 0 else { continue }
            let order = clients.indices.map { (first + $0) % clients.count }
            for index in slice.isMultiple(of: 2) ? order : order.reversed() {
                let run = try await measure(clients[index], requests: size, concurrency: concurrency)
                totals[index].seconds += Double(size) / run.rate
                totals[index].cpu += run.cpu * Double(size)
                totals[index].switches += run.switches * Double(size)
                totals[index].sliceCPU.append(run.cpu)
            }
        }
        let count = Double(requests)
        return totals.map { (count / $0.seconds, $0.cpu / count, $0.switches / count, $0.sliceCPU) }
    }

    /// Runs `requests` requests with `concurrency` workers; returns requests per second, CPU µs per
    /// request and the process's context switches per request.
    static func measure(_ variant: Variant, requests: Int, concurrency: Int) async throws -> (rate: Double, cpu: Double, switches: Double) {
        let counter = RunCounter(total: requests)
        let cpuStart = processCPUMicroseconds()
        let switchesStart = processContextSwitches()
        let start = now()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask { await variant.run(counter, worker) }
            }
        }
        let seconds = Double(now() - start) / 1e9
        let cpu = processCPUMicroseconds() - cpuStart
        let switches = processContextSwitches() - switchesStart
        guard counter.failures == 0 else {
            throw BenchError("\(variant.name): \(counter.failures) of \(requests) requests failed")
        }
        return (Double(requests) / seconds, cpu / Double(requests), switches / Double(requests))
    }
}
