import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

/// A response whose head has 10,000 header fields, while another send's 0.5 s deadline runs.
///
/// FoundationNetworking parses a response head in time quadratic in its fields, on a work queue that
/// every URLSession in the process shares: on URLSession the case runs in a child process
/// (`switchboard-probe race`), where holding that queue for seconds stalls nobody else's transfers.
/// The libcurl transport takes it in this process. On both, the other send's deadline holds: it ends
/// `timedOut` about half a second in, never after the flood, and the flood ends in a typed outcome.
@Suite(.serialized, hangGuard, admission) struct HeaderFloodTests {
    static let fields = 10_000

    /// `/flood`: 200 with `fields` header fields; `/never`: no answer.
    static func install(on server: LoopbackServer) {
        server.route(nil, "/flood") { _ in
            ServerResponse(status: 200, headers: [("Content-Type", "application/json")] + (0..<fields).map { ("X-Flood-\($0)", "v\($0)") }, body: .data(Data("{}".utf8)))
        }
        server.route(nil, "/never") { _ in ServerResponse(status: 200, body: .never) }
    }

    /// The other send: its deadline (0.5 s) plus the sweeper's grace period for a transport that
    /// doesn't report the stop (1 s) and a tick, scaled for a sanitizer.
    static var otherBound: TimeInterval { (0.5 + 1.2) * timeScale + 0.5 }

    @Test func onURLSessionTheFloodHoldsUpNoOtherSendsDeadline() async throws {
        try await withServer { server in
            Self.install(on: server)
            let outcome = try await ChildProcessFaultTests.runProbe(
                arguments: ["race", server.url("/flood").absoluteString, "20", server.url("/never").absoluteString, "0.5"], limit: 120
            )
            #expect(!outcome.timedOut && !outcome.crashed && outcome.status == 0, "the probe: \(outcome.output) \(outcome.errors.suffix(400))")
            let lines = outcome.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            let other = try #require(lines.first { $0.first == "2" }, "no outcome for the other send: \(outcome.output)")
            #expect(other[1] == "failed" && other.joined(separator: " ").contains("timed out after 0.5"), "\(other)")
            let otherSeconds = try #require(other.last.flatMap(Double.init))
            #expect(otherSeconds < Self.otherBound, "the other send's 0.5 s deadline ended it at \(otherSeconds) s")
            let flood = try #require(lines.first { $0.first == "1" }, "no outcome for the flood: \(outcome.output)")
            let floodSeconds = try #require(flood.last.flatMap(Double.init))
            if flood[1] == "succeeded" {
                #expect(flood[2] == "200" && Int(flood[3]) ?? 0 >= Self.fields, "\(flood)")
            } else {
                // FoundationNetworking takes about 11 s of CPU over this head on this machine; its own
                // deadline may end it first on a loaded one (and under a sanitizer): it must say so.
                #expect(flood.joined(separator: " ").contains("timed out after 20"), "\(flood)")
                #expect(floodSeconds < 20 + 1.5 * timeScale, "\(flood)")
            }
            print("HeaderFloodTests: URLSession, in a child process: the flood ended at \(floodSeconds) s (\(flood[1])), the other send timed out at \(otherSeconds) s")
        }
    }

    @Test(TransportUnderTest.curlOnly) func onLibcurlTheFloodArrivesWholeAndHoldsUpNoOtherSendsDeadline() async throws {
        try await withServer { server in
            Self.install(on: server)
            let client = makeClient(server) { $0.transport = .curl }
            let started = Date()
            let ends = Box<[String: (Date, Result<Response<Get>, NetworkError>)]>([:])
            client.send(Get("/flood").with(\.timeout, 30)) { result in ends.mutate { $0["flood"] = (Date(), result) } }
            client.send(Get("/never").with(\.timeout, 0.5)) { result in ends.mutate { $0["other"] = (Date(), result) } }
            #expect(await eventually(timeout: 60) { ends.value.count == 2 })
            let other = try #require(ends.value["other"])
            guard case .timedOut = other.1.failure else {
                Issue.record("the other send: expected timedOut, got \(other.1)")
                return
            }
            #expect(other.0.timeIntervalSince(started) < Self.otherBound, "the other send's 0.5 s deadline ended it at \(other.0.timeIntervalSince(started)) s")
            let flood = try #require(ends.value["flood"])
            let response = try flood.1.get()
            #expect(response.statusCode == 200)
            #expect(response.headers.count >= Self.fields)
            #expect(response.headers["X-Flood-9999"] == "v9999")
        }
    }
}
