import Foundation
import Switchboard

/// Body → `JSON` against `JSONSerialization.jsonObject`, and body → `Decodable` models against
/// `JSONDecoder`, for 1 KiB and 1 MiB of typical API JSON.
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
                    baselineName: "JSONSerialization", target: "≤ 0.4×"
                ))
            // A typed request's decode stage against `JSONDecoder` called directly, one decoder for both.
            let decoder = JSONCoding { $0.keyDecoding = .convertFromSnakeCase }.makeDecoder()
            guard case .success = DecodeStage.typed(Page.self, from: data, decoder: decoder) else { throw BenchError("the \(label) document does not decode") }
            var stage: [Double] = [], direct: [Double] = []
            for _ in 0..<rounds {
                direct.append(
                    time(iterations) {
                        if let page = try? decoder.decode(Page.self, from: data) { blackHole &+= page.data.count }
                    })
                stage.append(
                    time(iterations) {
                        if case .success(let page) = DecodeStage.typed(Page.self, from: data, decoder: decoder) { blackHole &+= page.data.count }
                    })
            }
            figures.append(
                Figure(
                    name: "decode \(label) into Decodable models", unit: unit,
                    candidate: stage.map { $0 / scale }, baseline: direct.map { $0 / scale },
                    baselineName: "JSONDecoder", target: "≤ 1.1×"
                ))
        }
        return ScenarioResult(
            scenario: "decode",
            note: "JSON.parse vs JSONSerialization.jsonObject; a typed request's decode stage vs JSONDecoder.decode on the same bytes; \(rounds) rounds, interleaved.",
            figures: figures)
    }

    /// Nanoseconds per call of `body`, averaged over `iterations` calls.
    static func time(_ iterations: Int, _ body: () -> Void) -> Double {
        let start = now()
        for _ in 0..<iterations { body() }
        return Double(now() - start) / Double(iterations)
    }
}

/// The models of ``Documents/apiJSON(bytes:)``, as an app declares them (snake-case keys converted).
struct Page: Decodable, Sendable {
    struct Record: Decodable, Sendable {
        struct Address: Decodable, Sendable {
            let city: String
            let zip: String
            let line: String
        }
        let id: Int
        let name: String
        let email: String
        let active: Bool
        let score: Double
        let createdAt: String
        let tags: [String]
        let address: Address
        let manager: String?
    }
    let page: Int
    let perPage: Int
    let data: [Record]
    let total: Int
    let note: String
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
