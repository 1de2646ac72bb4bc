import Foundation

/// Median, minimum and maximum of a set of samples.
struct Summary: Codable {
    let median: Double
    let min: Double
    let max: Double

    init(_ samples: [Double]) {
        let sorted = samples.sorted()
        median =
            sorted.isEmpty
            ? .nan
            : sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        min = sorted.first ?? .nan
        max = sorted.last ?? .nan
    }

    /// `12.3 (11.9–13.0)`
    func formatted(_ digits: Int = 1) -> String {
        "\(format(median, digits)) (\(format(min, digits))–\(format(max, digits)))"
    }
}

func format(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "-" }
    if abs(value) >= 1_000_000 { return String(format: "%.2fM", value / 1_000_000) }
    return String(format: "%.\(digits)f", value)
}

/// One measured figure: the candidate's and the baseline's samples per round, and the ratio computed
/// round by round (so drift of the machine between rounds cancels out).
struct Figure: Codable {
    let name: String
    let unit: String
    let candidate: Summary
    let baseline: Summary?
    let baselineName: String?
    let ratio: Summary?
    let target: String?

    init(name: String, unit: String, candidate: [Double], baseline: [Double]? = nil, baselineName: String? = nil, target: String? = nil) {
        self.name = name
        self.unit = unit
        self.candidate = Summary(candidate)
        self.baseline = baseline.map(Summary.init)
        self.baselineName = baselineName
        if let baseline, baseline.count == candidate.count {
            ratio = Summary(zip(candidate, baseline).map { $0 / $1 })
        } else {
            ratio = nil
        }
        self.target = target
    }
}

/// The figures of one scenario.
struct ScenarioResult: Codable {
    let scenario: String
    let note: String
    let figures: [Figure]

    func printTable() {
        print("\n## \(scenario)\n\(note)\n")
        print("| figure | unit | Switchboard | baseline | ratio (per round) | target |")
        print("|---|---|---|---|---|---|")
        for figure in figures {
            let baseline = figure.baseline.map { "\(figure.baselineName ?? "baseline"): \($0.formatted())" } ?? "-"
            let ratio = figure.ratio?.formatted(3) ?? "-"
            print("| \(figure.name) | \(figure.unit) | \(figure.candidate.formatted()) | \(baseline) | \(ratio) | \(figure.target ?? "-") |")
        }
    }
}

/// Process CPU time (user + system) in microseconds, from getrusage.
func processCPUMicroseconds() -> Double {
    let usage = processUsage()
    let user = Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec)
    let system = Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec)
    return user + system
}

/// Context switches of this process so far, voluntary (a thread waits) and involuntary (preempted).
func processContextSwitches() -> Double {
    let usage = processUsage()
    return Double(usage.ru_nvcsw + usage.ru_nivcsw)
}

private func processUsage() -> rusage {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return usage
}

/// Monotonic nanoseconds.
@inline(__always)
func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Keeps results alive so the optimizer can't drop the work.
nonisolated(unsafe) var blackHole = 0
