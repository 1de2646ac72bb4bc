import Foundation
import Switchboard

/// Request body compression (`BodyCompression.gzip`, zlib loaded at run time): what it costs per MiB
/// and how small it makes typical API JSON, at zlib's default level 6 and at 1 (fastest), against
/// serialising the same body (what a send pays anyway).
enum CompressionScenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        let rounds = quick ? 2 : 9
        var figures: [Figure] = []
        let data = Documents.apiJSON(bytes: 1 << 20)
        let tree = try JSON.parse(data)
        for level in [6, 1] {
            var compress: [Double] = [], serialise: [Double] = [], sizes: [Double] = []
            for _ in 0..<rounds {
                serialise.append(DecodeScenario.time(quick ? 1 : 4) { blackHole &+= tree.serialized().count })
                compress.append(
                    DecodeScenario.time(quick ? 1 : 4) {
                        if let packed = try? BodyCompression.gzipped(data, level: level) { blackHole &+= packed.count }
                    })
                sizes.append(Double(try BodyCompression.gzipped(data, level: level).count) / Double(data.count) * 100)
            }
            figures.append(
                Figure(
                    name: "gzip 1 MiB of API JSON, level \(level)", unit: "ms/MiB", candidate: compress.map { $0 / 1e6 }, baseline: serialise.map { $0 / 1e6 },
                    baselineName: "serialising it (JSON)"))
            figures.append(Figure(name: "its compressed size, level \(level)", unit: "% of the body", candidate: sizes))
        }
        return ScenarioResult(
            scenario: "compression", note: "BodyCompression.gzipped on 1 MiB of generated API JSON, \(rounds) rounds; the baseline serialises the same JSON tree.",
            figures: figures)
    }
}
