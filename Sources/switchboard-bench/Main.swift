import Foundation

/// `swift run -c release switchboard-bench [scenario…] [--quick] [--json FILE] [--chart FILE.svg]`
///
/// Measures Switchboard against raw URLSession and Foundation, side by side, in one run: every figure
/// is a median with min–max over rounds, and the ratio to its baseline is computed round by round with
/// baseline and candidate interleaved, so drift of the machine is shared. `--quick` runs every scenario
/// small, to prove the benchmarks still work (CI); its figures mean little.
@main
struct Bench {
    static let scenarios: [(name: String, run: @Sendable (Bool) async throws -> ScenarioResult)] = [
        ("e2e", E2EScenario.run),
        ("fanout", FanoutScenario.run),
        ("registry", RegistryScenario.run),
        ("decode", DecodeScenario.run),
        ("compression", CompressionScenario.run),
        ("pipeline", PipelineScenario.run),
        ("isolation", IsolationScenario.run),
        ("soak", SoakScenario.run),
        ("transfer", TransferScenario.run),
        ("cache", CacheScenario.run),
        ("coalescing", CoalescingScenario.run),
        ("http2", HTTP2Scenario.run),
    ]

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--serve" { ServeMode.run() }
        let quick = arguments.contains("--quick")
        arguments.removeAll { $0 == "--quick" }
        var jsonPath: String?
        if let index = arguments.firstIndex(of: "--json") {
            guard index + 1 < arguments.count else { fail("--json needs a file name") }
            jsonPath = arguments[index + 1]
            arguments.removeSubrange(index...(index + 1))
        }
        var chartPath: String?
        if let index = arguments.firstIndex(of: "--chart") {
            guard index + 1 < arguments.count else { fail("--chart needs a file name") }
            chartPath = arguments[index + 1]
            arguments.removeSubrange(index...(index + 1))
        }
        if let unknown = arguments.first(where: { name in !scenarios.contains { $0.name == name } }) {
            fail("unknown scenario \(unknown); choose from \(scenarios.map(\.name).joined(separator: ", "))")
        }
        let chosen = arguments.isEmpty ? scenarios : scenarios.filter { arguments.contains($0.name) }

        print("# switchboard-bench \(quick ? "(quick)" : "")")
        print("date: \(ISO8601DateFormatter().string(from: Date())), cores: \(ProcessInfo.processInfo.activeProcessorCount), \(buildMode)")
        var results: [ScenarioResult] = []
        for scenario in chosen {
            do {
                let result = try await scenario.run(quick)
                result.printTable()
                results.append(result)
            } catch {
                fail("scenario \(scenario.name) failed: \(error)")
            }
        }
        // The e2e scenario's clients as an SVG chart (BENCHMARKS.md opens with it).
        if let chartPath {
            guard let e2e = results.first(where: { $0.scenario == "e2e" }) else { fail("--chart draws the e2e scenario: run it") }
            let title = "switchboard-bench e2e, \(ISO8601DateFormatter().string(from: Date())), \(ProcessInfo.processInfo.activeProcessorCount) cores\(quick ? " (quick)" : "")"
            do {
                try Chart.svg(e2e, title: title).write(toFile: chartPath, atomically: true, encoding: .utf8)
                print("\nwrote \(chartPath)")
            } catch {
                fail("could not write \(chartPath): \(error)")
            }
        }
        if let jsonPath {
            let report = Report(date: ISO8601DateFormatter().string(from: Date()), quick: quick, cores: ProcessInfo.processInfo.activeProcessorCount, results: results)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            do {
                try encoder.encode(report).write(to: URL(fileURLWithPath: jsonPath))
                print("\nwrote \(jsonPath)")
            } catch {
                fail("could not write \(jsonPath): \(error)")
            }
        }
    }

    static var buildMode: String {
        #if DEBUG
        "DEBUG build (figures are meaningless; use -c release)"
        #else
        "release build"
        #endif
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("switchboard-bench: \(message)\n".utf8))
        exit(1)
    }
}

/// The JSON written by `--json`.
struct Report: Codable {
    let date: String
    let quick: Bool
    let cores: Int
    let results: [ScenarioResult]
}
