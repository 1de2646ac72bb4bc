import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import Testing

/// The interop suite: Dispatcher against httpbin (PyPI `httpbin`, under gunicorn on 127.0.0.1), a
/// server that isn't ours. `.ci/run` installs and starts it and sets `HTTPBIN_URL`; without that
/// variable (a plain `swift test` on a fresh machine) the suite is skipped.
/// The httpbin server the interop suite talks to, from `HTTPBIN_URL`.
let httpbinURL: URL? = ProcessInfo.processInfo.environment["HTTPBIN_URL"].flatMap(URL.init(string:))

/// The transport of the interop suites: URLSession, or libcurl's with `SWITCHBOARD_INTEROP_TRANSPORT=curl`
/// (`.ci/run` runs the suites both ways).
let interopTransport: TransportFactory = ProcessInfo.processInfo.environment["SWITCHBOARD_INTEROP_TRANSPORT"] == "curl" ? .curl : .urlSession

@Suite(.enabled(if: httpbinURL != nil, "set HTTPBIN_URL to an httpbin server to run the interop suite"), hangGuard, admission)
struct InteropTests {
    static var baseURL: URL? { httpbinURL }

    func client(_ configure: (inout Configuration) -> Void = { _ in }) throws -> Dispatcher {
        let base = try #require(Self.baseURL)
        var configuration = Configuration()
        configuration.baseURL = base
        configuration.callbackQueue = .immediate
        configuration.transport = interopTransport
        configure(&configuration)
        return Dispatcher(configuration: configuration)
    }

    @Test func getSendsSortedEscapedQueryArguments() async throws {
        let response = try await client().response(for: Get("/get").with(\.parameters, ["q": "a b&c", "n": 1, "tags": ["x", "y"]]))
        #expect(response.json["args"]["q"] == "a b&c")
        #expect(response.json["args"]["n"] == "1")
        #expect(response.json["args"]["tags[]"] == ["x", "y"])
    }

    @Test(arguments: [HTTPMethod.post, .put, .patch, .delete])
    func everyMethodReachesItsEndpointWithItsBody(method: HTTPMethod) async throws {
        let path = "/" + method.rawValue.lowercased()
        let request = Get(path).with(\.method, method).with(\.parameters, ["name": "Ada"])
        let response = try await client { $0.bodyEncoding = .json }.response(for: request.with(\.method, method))
        if method == .delete {
            #expect(response.json["args"]["name"] == "Ada")  // DELETE puts parameters in the query
        } else {
            #expect(response.json["json"]["name"] == "Ada")
        }
    }

    @Test func formBodiesArriveAsForms() async throws {
        let response = try await client().response(for: Get("/post").with(\.method, .post).with(\.parameters, ["user": "ada", "pw": "p&ss"]))
        #expect(response.json["form"]["user"] == "ada")
        #expect(response.json["form"]["pw"] == "p&ss")
    }

    @Test func headersAndDefaultHeadersArrive() async throws {
        let response = try await client { $0.defaultHeaders = ["X-App": "interop"] }.response(for: Get("/headers").with(\.headers, ["X-Trace": "t1"]))
        #expect(response.json["headers"]["X-App"] == "interop")
        #expect(response.json["headers"]["X-Trace"] == "t1")
    }

    @Test func statusErrorsCarryTheirCode() async throws {
        let error = await (try client()).result(Get("/status/418")).failure
        #expect(error?.statusCode == 418)
    }

    @Test func basicAuthRightAndWrongNeverHangs() async throws {
        let ok = try await client().response(for: Get("/basic-auth/ada/pw").with(\.credentials, Credentials(user: "ada", password: "pw")))
        #expect(ok.json["authenticated"] == true)
        let wrong = await (try client()).result(Get("/basic-auth/ada/pw").with(\.credentials, Credentials(user: "ada", password: "no"))).failure
        #expect(wrong?.statusCode == 401)
        let none = await (try client()).result(Get("/basic-auth/ada/pw")).failure
        #expect(none?.statusCode == 401)
    }

    @Test func redirectsAreFollowedAndA307KeepsItsBody() async throws {
        let followed = try await client().response(for: Get("/redirect/3"))
        #expect(followed.json["url"].string?.hasSuffix("/get") == true)
        let target = "/anything/after".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let request = Get("/redirect-to?url=\(target)&status_code=307").with(\.method, .post).with(\.parameters, ["k": "v"])
        let kept = try await client().response(for: request)
        #expect(kept.json["method"] == "POST")
        #expect(kept.json["form"]["k"] == "v")
    }

    @Test(arguments: ["/gzip", "/deflate"])
    func compressedResponsesAreDecoded(path: String) async throws {
        let response = try await client().response(for: Get(path))
        #expect(response.json[path == "/gzip" ? "gzipped" : "deflated"] == true)
    }

    @Test func aSlowResponseHitsTheDeadline() async throws {
        let error = await (try client()).result(Get("/delay/5").with(\.timeout, 0.5)).failure
        expectError(error, { if case .timedOut = $0 { true } else { false } }, "timedOut")
    }

    @Test func binaryBodiesArriveWhole() async throws {
        let response = try await client().response(for: Get("/bytes/102400").with(\.responseFormat, .data))
        #expect(response.data.count == 102_400)
    }

    @Test func nonJSONBodiesAreTypedErrors() async throws {
        let html = await (try client()).result(Get("/html")).failure
        expectError(html, { if case .unacceptableContentType = $0 { true } else { false } }, "unacceptableContentType")
        let lines = await (try client()).result(Get("/stream/3")).failure
        expectError(lines, { if case .decoding = $0 { true } else { false } }, "decoding")
    }

    @Test func retriesEndAfterTheirAttemptsWithTheLastError() async throws {
        let policy = RetryPolicy(maximumAttempts: 3, initialDelay: 0.01)
        let sb = try client { $0.retryPolicy = policy }
        let recorder = EventLog<Get>()
        sb.addObserver(recorder, for: Get.self, on: .immediate) { $0.record($1) }
        let error = await sb.result(Get("/status/503")).failure
        #expect(error?.statusCode == 503)
        #expect(recorder.events.last?.attempts == 3, "three attempts, the last one's 503")
        #expect(recorder.events.filter(\.isTerminal).count == 1)
    }

    @Test func slowDripIsCollectedWithProgress() async throws {
        let sb = try client()
        let progress = Box<[Int64]>([])
        let listener = Listener()
        sb.addObserver(listener, for: Get.self, on: .immediate) { _, event in
            if case .progress(_, let value) = event.kind { progress.mutate { $0.append(value.bytesReceived) } }
        }
        let response = try await sb.response(for: Get("/drip?numbytes=50&duration=1&delay=0").with(\.responseFormat, .data).with(\.reportsProgress, true))
        #expect(response.data.count == 50)
        #expect(progress.value.last == 50)
    }
}
