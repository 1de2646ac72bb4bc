import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// Collects log lines.
final class CapturingLogger: NetworkLogger {
    let records = Box<[LogRecord]>([])
    func log(_ record: LogRecord) { records.mutate { $0.append(record) } }
    var text: String { records.value.map(\.message).joined(separator: "\n") }
}

@Suite(hangGuard, admission) struct LoggingTests {
    @Test(arguments: TransportUnderTest.network) func debugModeLogsMethodURLParametersStatusDurationAndBodyPreview(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let logger = CapturingLogger()
            let client = makeClient(server, on: kind) {
                $0.logMode = .debug; $0.logger = logger
            }
            _ = try await client.response(for: Get("/api.php").with(\.parameters, ["type": "List", "start": 0, "end": 2]))
            let text = logger.text
            #expect(text.contains("→ GET \(server.baseURL.absoluteString)/api.php?end=2&start=0&type=List"))
            #expect(text.contains("parameters: end=2&start=0&type=List"))
            #expect(text.contains("← 200 GET"))
            #expect(text.contains(" ms)"))
            #expect(text.contains(#""title":"Item 1""#))
        }
    }

    @Test(arguments: TransportUnderTest.network) func secretsNeverReachTheLog(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let logger = CapturingLogger()
            let client = makeClient(server, on: kind) {
                $0.logMode = .debug; $0.logger = logger
            }
            _ = try await client.response(
                for: Echo(
                    method: .post,
                    path: "/echo?access_token=qwerty&page=2",
                    parameters: ["username": "ada", "password": "hunter2", "nested": ["apiSecret": "s3"]],
                    headers: ["Cookie": "session=abc"],
                    credentials: Credentials(user: "ada", password: "pw")
                ))
            _ = try await client.response(for: Echo(method: .post, parameters: ["refreshToken": "r1"], parameterEncoding: .json))
            let text = logger.text
            // What Switchboard logs of the requests: no secret at all.
            let requestSide = logger.records.value.map(\.message).filter { $0.hasPrefix("→") }.joined(separator: "\n")
            #expect(requestSide.contains("/echo"), "the request side was logged: \(requestSide)")  // else the checks below say nothing
            for secret in ["hunter2", "qwerty", "session=abc", "YWRhOnB3", "s3", "r1"] {
                #expect(!requestSide.contains(secret), "request log leaks \(secret)")
            }
            // The echo server sends them back; JSON keys that name secrets are redacted in the response
            // preview too (strings that merely contain a secret can't be recognised).
            #expect(!text.contains("YWRhOnB3"))
            #expect(!text.contains("qwerty"))
            #expect(text.contains("username=ada"))
            #expect(text.contains("page=2"))
            #expect(text.contains("Authorization: <redacted>"))
        }
    }

    @Test(arguments: TransportUnderTest.network) func errorsModeLogsOnlyFailuresAndOffLogsNothing(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let errors = CapturingLogger()
            let client = makeClient(server, on: kind) {
                $0.logMode = .errors; $0.logger = errors
            }
            _ = try await client.response(for: Get("/echo"))
            _ = await client.result(Get("/status/500"))
            #expect(errors.records.value.count == 1)
            #expect(errors.records.value.first?.level == .error)
            #expect(errors.text.contains("HTTP 500"))
            let silent = CapturingLogger()
            _ = await makeClient(server, on: kind) { $0.logger = silent }.result(Get("/status/500"))
            #expect(silent.records.value.isEmpty)
        }
    }

    @Test func cURLDescriptionIsRedactedByDefault() throws {
        let client = Dispatcher(configuration: Configuration { $0.baseURL = URL(string: "https://api.example.com") })
        let request = Echo(method: .post, path: "/login?token=abc", parameters: ["user": "ada", "password": "it's"], credentials: Credentials(user: "ada", password: "pw"))
        let redacted = try client.cURLDescription(for: request)
        #expect(redacted.hasPrefix("curl -X POST"))
        #expect(redacted.contains("-H 'Authorization: <redacted>'"))
        #expect(redacted.contains("password=<redacted>"))
        #expect(redacted.contains("token=<redacted>"))
        #expect(redacted.hasSuffix("'https://api.example.com/login?token=<redacted>'"))
        let raw = try client.cURLDescription(for: request, redacted: false)
        #expect(raw.contains("password=it%27s"))
        #expect(raw.contains("Basic YWRhOnB3"))
        #expect(throws: NetworkError.self) { try Dispatcher().cURLDescription(for: Echo()) }
    }

    /// A HEAD is `--head`: with `-X HEAD` curl waits for a body that never comes.
    @Test func aHeadRequestIsCurlsHeadNotAMethodOverride() throws {
        let client = Dispatcher(configuration: Configuration { $0.baseURL = URL(string: "https://api.example.com") })
        let line = try client.cURLDescription(for: Echo(method: .head, path: "/ping"))
        #expect(line.hasPrefix("curl --head "), "\(line)")
        #expect(!line.contains("-X"), "\(line)")
        #expect(try client.cURLDescription(for: Echo(method: .delete, path: "/ping")).hasPrefix("curl -X DELETE "))
    }
}
