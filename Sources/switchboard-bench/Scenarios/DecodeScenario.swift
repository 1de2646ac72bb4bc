import Foundation
import Switchboard

/// Body → `JSON` against `JSONSerialization.jsonObject`, for 1 KiB and 1 MiB of typical API JSON.
enum DecodeScenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        let rounds = quick ? 2 : 11
        var figures: [Figure] = []
        for (label, size, iterations) in [("1 KiB", 1024, quick ? 200 : 4000), ("1 MiB", 1 << 20, quick ? 1 : 8)] {
            let data = Documents.apiJSON(bytes: size)
            guard (try? JSON.parse(data)) != nil, (try? JSONSerialization.jsonObject(with: data)) != nil else {
                throw BenchError("the \(label) document does not parse")
            }
            var ours: [Double] = [], foundation: [Double] = []
            for _ in 0..<rounds {
                foundation.append(
                    time(iterations) {
                        if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] { blackHole &+= object.count }
                    })
                ours.append(
                    time(iterations) {
                        if case .object(let object)? = try? JSON.parse(data) { blackHole &+= object.count }
                    })
            }
            let unit = size > 10_000 ? "ms" : "µs"
            let scale = size > 10_000 ? 1e6 : 1e3
            figures.append(
                Figure(
                    name: "parse \(label)", unit: unit,
                    candidate: ours.map { $0 / scale }, baseline: foundation.map { $0 / scale },
                    baselineName: "JSONSerialization", target: "≤ 1.1×"
                ))
        }
        return ScenarioResult(scenario: "decode", note: "JSON.parse vs JSONSerialization.jsonObject, ns → \(rounds) rounds, interleaved.", figures: figures)
    }

    /// Nanoseconds per call of `body`, averaged over `iterations` calls.
    static func time(_ iterations: Int, _ body: () -> Void) -> Double {
        let start = now()
        for _ in 0..<iterations { body() }
        return Double(now() - start) / Double(iterations)
    }
}

/// Generated test documents.
enum Documents {
    /// Typical API JSON (an array of user records) of about `bytes` bytes.
    static func apiJSON(bytes: Int) -> Data {
        var text = "{\"page\":1,\"per_page\":50,\"data\":["
        var index = 0
        while text.utf8.count < bytes - 250 || index == 0 {
            if index > 0 { text += "," }
            text += """
                {"id":\(100_000 + index),"name":"User \(index) Example","email":"user\(index)@example.com",\
                "active":\(index % 3 == 0 ? "true" : "false"),"score":\(Double(index) * 1.25 + 0.5),\
                "created_at":"2024-05-\(10 + index % 18)T12:34:56Z","tags":["alpha","beta\(index % 7)"],\
                "address":{"city":"Zürich","zip":"80\(index % 100)","line":"Street \(index)\\n2nd floor"},"manager":null}
                """
            index += 1
        }
        text += "],\"total\":\(index),\"note\":\""
        text += String(repeating: "x", count: max(0, bytes - text.utf8.count - 2)) + "\"}"
        return Data(text.utf8)
    }
}
