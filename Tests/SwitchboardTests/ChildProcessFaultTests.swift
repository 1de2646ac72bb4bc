import Dispatch
import Foundation
import LoopbackServer
import Testing

/// Fault cases that kill the process on the platform's URLSession, run in a child process
/// (`switchboard-probe`) so the suite survives them: each must end in a typed failure, or in the
/// known crash of FoundationNetworking (swift-corelibs-foundation#5285, fixed in Swift 6.4), which is
/// recorded. Anything else — a hang, a success, another crash — fails the test. The libcurl
/// transport survives them in this very process.
@Suite(.serialized, hangGuard, admission) struct ChildProcessFaultTests {
    /// How a probe ended.
    struct Outcome {
        var output: String
        var errors: String
        var crashed: Bool
        var status: Int32
        var timedOut: Bool
    }

    /// The probe beside the test bundle (`swift test` builds it with the package).
    static var probe: URL? {
        let directory = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        let candidate = directory.appendingPathComponent("switchboard-probe")
        return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
    }

    /// Runs the probe against `url`, off the cooperative pool, for at most `limit` seconds.
    static func runProbe(_ url: URL, deadline: TimeInterval = 3, limit: TimeInterval = 30) async throws -> Outcome {
        try await runProbe(arguments: [url.absoluteString, "\(deadline)"], limit: limit)
    }

    /// Runs the probe with `arguments`, off the cooperative pool, for at most `limit` seconds.
    static func runProbe(arguments: [String], limit: TimeInterval = 30) async throws -> Outcome {
        let probe = try #require(probe, "switchboard-probe is not built beside the tests")
        return try await withCheckedThrowingContinuation { continuation in
            onOwnThread {
                var environment = ProcessInfo.processInfo.environment
                environment["SWIFT_BACKTRACE"] = "enable=no"
                // Standard error to a file: a probe that writes much can't fill a pipe and stall.
                let errorsFile = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-probe-\(UUID().uuidString).err")
                _ = FileManager.default.createFile(atPath: errorsFile.path, contents: nil)
                defer { try? FileManager.default.removeItem(at: errorsFile) }
                let process: ChildProcess
                do {
                    let handle = try FileHandle(forWritingTo: errorsFile)
                    defer { try? handle.close() }
                    process = try ChildProcess(probe.path, arguments, environment: environment, errors: .file(handle))
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let timedOut = !process.wait(upTo: limit)
                if timedOut {
                    process.terminate()
                    if !process.wait(upTo: 5) { process.kill() }
                    process.wait()
                }
                let out = String(decoding: process.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
                let err = (try? String(contentsOf: errorsFile, encoding: .utf8)) ?? ""
                let status = process.wait()
                let signal = process.terminationSignal
                continuation.resume(
                    returning: Outcome(output: out, errors: err, crashed: signal != nil && !timedOut, status: signal ?? status, timedOut: timedOut))
            }
        }
    }

    /// The answers that end a transfer before FoundationNetworking has a whole response head.
    static let cases: [(name: String, bytes: String)] = [
        ("a status line, then close", "HTTP/1.1 200 OK\r\n"),
        ("headers cut off mid-way, then close", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Len"),
    ]

    @Test(arguments: cases.indices) func aConnectionClosedBeforeTheHeadEndsIsSurvivedOrTheKnownCrash(_ index: Int) async throws {
        let (name, bytes) = Self.cases[index]
        try await withServer { server in
            server.route("GET", "/cut") { _ in ServerResponse(status: 200, body: .raw(Data(bytes.utf8))) }
            let outcome = try await Self.runProbe(server.url("/cut"))
            #expect(!outcome.timedOut, "\(name): the probe hung")
            if outcome.crashed {
                // The known FoundationNetworking crash; recorded, not a failure of Switchboard.
                #expect(
                    outcome.errors.contains("Transfer completed, but there's no response"),
                    "\(name): a crash other than the known one: \(outcome.errors.suffix(500))")
                print(
                    "ChildProcessFaultTests: \(name): FoundationNetworking crashed the process (swift-corelibs-foundation#5285): \(outcome.errors.split(separator: "\n").first { $0.contains("rror") } ?? "")"
                )
            } else {
                #expect(outcome.status == 0 && outcome.output.hasPrefix("failed "), "\(name): expected a typed failure, got \(outcome.output) \(outcome.errors.suffix(300))")
            }
        }
    }

    @Test(TransportUnderTest.curlOnly, arguments: cases.indices) func theLibcurlTransportSurvivesTheSameCasesInProcess(_ index: Int) async throws {
        let (name, bytes) = Self.cases[index]
        try await withServer { server in
            server.route("GET", "/cut") { _ in ServerResponse(status: 200, body: .raw(Data(bytes.utf8))) }
            let error = await makeClient(server) { $0.transport = .curl }.result(Get("/cut").with(\.timeout, 10)).failure
            #expect(error?.urlErrorCode != nil, "\(name) on libcurl: expected a transport error, got \(String(describing: error))")
        }
    }

    /// A chunked response with a trailer field (RFC 9112 §7.1.2): FoundationNetworking reads the
    /// trailer as a new head and stops the process ("Transfer completed, but there's no response");
    /// the libcurl transport ignores trailers (RequestFramingParityTests).
    @Test func aChunkedResponseWithATrailerIsSurvivedOrTheKnownCrash() async throws {
        try await withServer { server in
            let bytes = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Checksum: 1\r\n\r\n"
            server.route("GET", "/trailer") { _ in ServerResponse(status: 200, body: .raw(Data(bytes.utf8))) }
            let outcome = try await Self.runProbe(server.url("/trailer"))
            #expect(!outcome.timedOut, "the probe hung")
            if outcome.crashed {
                #expect(outcome.errors.contains("Transfer completed, but there's no response"), "a crash other than the known one: \(outcome.errors.suffix(500))")
                print("ChildProcessFaultTests: a trailer field: FoundationNetworking crashed the process")
            } else {
                #expect(outcome.status == 0 && outcome.output.hasPrefix("succeeded 200"), "expected the response, got \(outcome.output) \(outcome.errors.suffix(300))")
            }
        }
    }

    @Test func theProbeReportsAnOrdinaryAnswerAndAnOrdinaryFailure() async throws {
        try await withServer { server in
            let fine = try await Self.runProbe(server.url("/small"))
            #expect(!fine.crashed && fine.output.hasPrefix("succeeded 200"), "\(fine.output) \(fine.errors)")
            let never = try await Self.runProbe(server.url("/delay/10000"), deadline: 0.3)
            #expect(!never.crashed && never.output.hasPrefix("failed ") && never.output.contains("0.3"), "\(never.output) \(never.errors)")
        }
    }
}
