import Foundation
import Switchboard

/// Writes Switchboard's log lines into the transcript.
struct TranscriptLogger: NetworkLogger {
    let transcript: Transcript
    func log(_ record: LogRecord) {
        for line in record.message.split(separator: "\n") { transcript.say("    log: \(line)") }
    }
}

/// Seed 000's advanced usage and seed 001's common request.
enum CustomisationScenarios {
    static let appVersion = "3.2.1"

    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "A URL filter adds the app version to every request (setupRequestFilters)") { transcript in
            Dispatcher.shared.updateConfiguration { $0.urlFilters.append(URLArgumentsFilter(["version": appVersion])) }
            let result = await Dispatcher.shared.sendAndWait(GetUserInfo(id: "9"))
            let version = (try? result.get())?.json["version"].string
            transcript.say("  the server saw version=\(version ?? "nothing")")
            transcript.check(version == appVersion, "every request now carries version=\(appVersion)")
        },
        DemoRunner.Scenario(title: "Custom header fields, merged with the configuration's") { transcript in
            Dispatcher.shared.updateConfiguration { $0.defaultHeaders = ["X-App": "Switchboard Demo"] }
            let headers = (try? await Dispatcher.shared.sendAndWait(EchoHeaders()).get())?.json["headers"] ?? .null
            transcript.say("  X-Client: \(headers["X-Client"].string ?? "-"), X-Device: \(headers["X-Device"].string ?? "-"), X-App: \(headers["X-App"].string ?? "-")")
            transcript.check(headers["X-Client"] == "switchboard-demo" && headers["X-App"] == "Switchboard Demo", "request and default headers both arrived")
        },
        DemoRunner.Scenario(title: "A fully custom URLRequest: gzipped events (buildCustomUrlRequest)") { transcript in
            let events = ["launch"] + (0..<48).map { "tap \($0 % 4)" } + ["close"]
            let result = await Dispatcher.shared.sendAndWait(UploadEvents(events: events))
            let json = (try? result.get())?.json ?? .null
            let sent = json["sentBytes"].int ?? 0, decoded = json["decodedBytes"].int ?? 0
            transcript.say("  the server unpacked \(json["received"].int ?? 0) events sent with Content-Encoding: \(json["encoding"].string ?? "?"): \(sent) bytes for \(decoded)")
            transcript.check(json["received"] == 50 && json["encoding"] == "gzip", "the request's own body, type and encoding were sent as built")
            transcript.check(sent > 0 && sent * 4 < decoded, "the body was really compressed (zlib, loaded at run time)")
        },
        DemoRunner.Scenario(title: "The common request: one call to /api.php with the seed's parameters, debug logging on") { transcript in
            Dispatcher.shared.updateConfiguration { $0.logMode = .debug }
            Dispatcher.shared.updateConfiguration { $0.logger = TranscriptLogger(transcript: transcript) }
            defer { Dispatcher.shared.updateConfiguration { $0.logMode = .off } }
            // Exactly seed 001's parameters.
            let parameters: JSON = ["type": "List", "City": "2", "lid": "31", "SortBy": "1", "Start": "0", "End": "3"]
            let result = await completion { Dispatcher.shared.request("/api.php", parameters: parameters, method: .get, completion: $0) }
            switch result {
            case .success(let json):
                let titles = json["list"].array?.compactMap { $0["title"].string } ?? []
                transcript.say("  list: \(titles.joined(separator: ", "))")
                transcript.check(titles == ["Item 0", "Item 1", "Item 2"], "a dictionary back in one call, with GET")
            case .failure(let error):
                transcript.check(false, "the common request failed: \(error)")
            }
            let failed = await completion { Dispatcher.shared.request("/status/404", method: .post, completion: $0) }
            if case .failure(let error) = failed {
                transcript.check(error.statusCode == 404, "a failure is a typed error (HTTP 404), never an empty dictionary")
            } else {
                transcript.check(false, "a 404 should fail")
            }
        },
        DemoRunner.Scenario(title: "A JSON validator the answer fails (jsonValidator)") { transcript in
            let result = await Dispatcher.shared.sendAndWait(StrictUserInfo(id: "5"))
            if case .failure(.jsonShape(let mismatch)) = result {
                transcript.say("  error: \(mismatch)")
                transcript.check(mismatch.path == "$.user.id", "the error names the path and what was expected")
            } else {
                transcript.check(false, "expected a JSON shape failure, got \(result)")
            }
        },
        DemoRunner.Scenario(title: "An expired token is refreshed on 401, once, and the request retried") { transcript in
            let refreshes = RefreshCounter()
            let refreshErrors = Locked<[String]>([])
            // The defaults: the refresh's own send, through the same dispatcher, is left alone.
            let auth = AuthenticationInterceptor(token: "expired-token") {
                refreshes.increment()
                do {
                    let response = try await Dispatcher.shared.response(for: RefreshToken())
                    return response.json["token"].string ?? ""
                } catch {
                    refreshErrors.withLock { $0.append("\(error)") }
                    throw error
                }
            }
            Dispatcher.shared.updateConfiguration { $0.interceptors = [auth] }
            defer { Dispatcher.shared.updateConfiguration { $0.interceptors = [] } }
            async let first = outcome(of: GetMe())
            async let second = outcome(of: GetMe())
            let (a, b) = await (first, second)
            switch (a, b) {
            case (.success(let a), .success(let b)):
                transcript.say("  two requests got 401 with the expired token; \(refreshes.count) refresh; each retried: attempts \(a.attempts) and \(b.attempts)")
                transcript.check(a.json["name"] == "Ada" && b.json["name"] == "Ada" && refreshes.count == 1, "one refresh for both, then both succeeded")
            default:
                let token = await auth.token ?? "none"
                transcript.check(
                    false,
                    "the refresh-on-401 pattern failed: first \(a.map(\.attempts)), second \(b.map(\.attempts)); \(refreshes.count) refreshes, their errors \(refreshErrors.withLock { $0 }), token now \(token)"
                )
            }
        },
        DemoRunner.Scenario(title: "An error code inside a 200 body becomes a typed failure") { transcript in
            Dispatcher.shared.updateConfiguration { $0.responseHooks = [APIErrorCodeHook(codeKey: "errorCode", messageKey: "message")] }
            defer { Dispatcher.shared.updateConfiguration { $0.responseHooks = [] } }
            let result = await Dispatcher.shared.sendAndWait(SessionCheck())
            if case .failure(.api(let error)) = result {
                transcript.say("  error: \(error)")
                transcript.check(error.intCode == 3 && error.message == "session expired", "code and message are kept")
            } else {
                transcript.check(false, "expected an API error, got \(result)")
            }
        },
        DemoRunner.Scenario(title: "A request retried until it succeeds on attempt 3") { transcript in
            let key = "demo-\(UUID().uuidString.prefix(8))"
            let result = await Dispatcher.shared.sendAndWait(FlakyFeed(key: key))
            let response = try? result.get()
            transcript.say("  the server failed twice with 503, then answered: attempt \(response?.json["attempt"].int ?? 0)")
            transcript.check(response?.attempts == 3, "one send, one result, three attempts")
        },
        DemoRunner.Scenario(title: "One event monitor follows every send: each attempt's status and the total time") { transcript in
            let metrics = AttemptMetrics()
            Dispatcher.shared.updateConfiguration { $0.monitors = [metrics] }
            defer { Dispatcher.shared.updateConfiguration { $0.monitors = [] } }
            let key = "metrics-\(UUID().uuidString.prefix(8))"
            _ = await Dispatcher.shared.sendAndWait(FlakyFeed(key: key))
            let lines = metrics.lines
            for line in lines { transcript.say("  \(line)") }
            transcript.check(
                lines.count == 4 && lines.last?.hasPrefix("finished 200") == true,
                "three attempts (503, 503, 200) and one result, seen by a monitor of the app's own")
        },
    ]
}

/// Metrics of the app's own: each attempt's status and each send's total time, as a monitor.
final class AttemptMetrics: EventMonitor {
    private let recorded = Locked<[String]>([])
    var lines: [String] { recorded.withLock { $0 } }

    func request(_ send: SendContext, didReceive result: Result<TransportResponse, NetworkError>, attempt: Int) {
        let status = (try? result.get()).map { "\($0.httpResponse.statusCode)" } ?? "no response"
        recorded.withLock { $0.append("attempt \(attempt): \(status)") }
    }

    func request(_ send: SendContext, didFinish result: Result<ResponseContext, NetworkError>) {
        let status = (try? result.get()).map { "\($0.httpResponse.statusCode)" } ?? "failed"
        recorded.withLock { $0.append("finished \(status) in \(String(format: "%.0f", send.elapsed * 1000)) ms") }
    }
}

/// The result of a send through the shared dispatcher, awaited.
func outcome<R: Request>(of request: R) async -> Result<Response<R>, NetworkError> {
    do {
        return .success(try await Dispatcher.shared.response(for: request))
    } catch {
        return .failure(error)
    }
}

/// Counts token refreshes, from any thread.
final class RefreshCounter: Sendable {
    private let value = Locked(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
