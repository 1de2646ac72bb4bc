import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// The response cache never answers one user's request with another's, on every network transport:
/// it is keyed by the request that goes on the wire (after adapters and interceptors, with the jar's
/// cookies), by the body's bytes and by the fields `Vary` names; and a send never waits for the disk.
/// `/counter/:key` answers a count that grows with every request and echoes `Authorization` and
/// `Cookie`, so a stored answer shows as an old count and whose request it was.
@Suite(hangGuard, admission) struct CacheSafetyTests {
    struct Counted: Request {
        var key: String
        var policy: CachePolicy
        var query = ""
        var method: HTTPMethod = .get
        var body: RequestBody? = nil
        var headers: HTTPHeaders = [:]
        var path: String { "/counter/\(key)\(query)" }
        var cachePolicy: CachePolicy? { policy }
    }

    /// Puts the signed-in user's bearer token on every request, as an app's adapter would.
    struct SignedIn: RequestAdapter {
        let user: Box<String>
        func adapt(_ request: inout OutgoingRequest, for original: any Request) throws {
            request.headers["Authorization"] = "Bearer token-of-\(user.value)"
        }
    }

    /// A cache in a fresh folder, removed when the test ends.
    final class Scratch: Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-cache-safety-\(UUID().uuidString)")
        func cache() -> ResponseCache { ResponseCache(directory: folder, logger: nil) }
        /// The bytes of every entry file on disk.
        func files() throws -> [Data] {
            guard FileManager.default.fileExists(atPath: folder.path) else { return [] }  // nothing was ever stored
            return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".cache") }
                .map { try Data(contentsOf: folder.appendingPathComponent($0)) }
        }
        deinit { try? FileManager.default.removeItem(at: folder) }
    }

    static func client(_ server: LoopbackServer, _ kind: TransportUnderTest, _ cache: ResponseCache, _ configure: (inout Configuration) -> Void = { _ in }) -> Dispatcher {
        makeClient(server) {
            $0.cache = cache
            $0.transport = kind.factory
            configure(&$0)
        }
    }

    /// The count, where it came from, and whose token and cookie the server saw.
    static func seen(_ response: Response<Counted>) -> String {
        "\(response.json["count"].int ?? -1) \(response.source) \(response.json["auth"].string ?? "?") \(response.json["cookie"].string ?? "?")"
    }

    @Test(arguments: TransportUnderTest.network)
    func anAdaptersTokenKeepsARequestOutOfTheCacheWithoutTheOptIn(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let user = Box("alice")
            let client = Self.client(server, kind, scratch.cache()) { $0.adapters = [SignedIn(user: user)] }
            let request = Counted(key: "adapter", policy: CachePolicy(timeToLive: 60))
            let alice = try await client.response(for: request)
            user.mutate { $0 = "bob" }
            let bob = try await client.response(for: request)
            #expect(Self.seen(alice) == "1 network Bearer token-of-alice ")
            #expect(Self.seen(bob) == "2 network Bearer token-of-bob ", "bob is never answered with alice's response")
            #expect(server.hits("/counter/adapter") == 2)
            scratch.cache().flush()
            #expect(try scratch.files().isEmpty, "an authenticated response is not stored without the opt-in")
        }
    }

    /// A session whose `httpAdditionalHeaders` carry a token (URLSession adds it to every request,
    /// where the cache can't see it): none of its requests uses the cache, even with the opt-in.
    @Test(arguments: [false, true])
    func aSessionsOwnCredentialHeadersKeepEveryRequestOutOfTheCache(optIn: Bool) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let cache = scratch.cache()
            func client(_ user: String) -> Dispatcher {
                let session = URLSessionConfiguration.ephemeral
                session.httpAdditionalHeaders = ["authorization": "Bearer token-of-\(user)"]
                return makeClient(server) {
                    $0.cache = cache
                    $0.transport = .urlSession(session)
                }
            }
            let request = Counted(key: "session", policy: CachePolicy(timeToLive: 60, cachesAuthenticatedRequests: optIn))
            let alice = try await client("alice").response(for: request)
            let bob = try await client("bob").response(for: request)
            let again = try await client("alice").response(for: request)
            #expect(Self.seen(alice) == "1 network Bearer token-of-alice ")
            #expect(Self.seen(bob) == "2 network Bearer token-of-bob ", "bob is never answered with alice's response")
            #expect(Self.seen(again) == "3 network Bearer token-of-alice ")
            cache.flush()
            #expect(try scratch.files().isEmpty, "nothing is stored")
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func anInterceptorsTokenKeysTheEntrySoOneUserNeverGetsAnothersResponse(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let cache = scratch.cache()
            func signedIn(_ user: String) -> Dispatcher {
                Self.client(server, kind, cache) { $0.interceptors = [AuthenticationInterceptor(token: "token-of-\(user)") { "token-of-\(user)" }] }
            }
            let (alice, bob) = (signedIn("alice"), signedIn("bob"))
            // Without the opt-in: neither served nor stored.
            let closed = Counted(key: "closed", policy: CachePolicy(timeToLive: 60))
            _ = try await alice.response(for: closed)
            #expect(Self.seen(try await bob.response(for: closed)) == "2 network Bearer token-of-bob ")
            #expect(Self.seen(try await alice.response(for: closed)) == "3 network Bearer token-of-alice ")

            // With it: an entry per token.
            let open = Counted(key: "open", policy: CachePolicy(timeToLive: 60, cachesAuthenticatedRequests: true))
            let sequence = [alice, alice, bob, bob, alice]
            var seen: [String] = []
            for client in sequence { seen.append(Self.seen(try await client.response(for: open))) }
            #expect(
                seen == [
                    "1 network Bearer token-of-alice ", "1 cache Bearer token-of-alice ", "2 network Bearer token-of-bob ", "2 cache Bearer token-of-bob ",
                    "1 cache Bearer token-of-alice ",
                ])
            cache.flush()
            let files = try scratch.files()
            #expect(files.count == 2)
            // The key holds a hash of the token, not the token (the body, the server's echo, has it).
            let texts = files.map { String(decoding: $0, as: UTF8.self) }
            #expect(texts.allSatisfy { $0.contains(#"\nauth "#) }, "the stored key ends in the credentials' hash")
            #expect(texts.allSatisfy { $0.components(separatedBy: "token-of-").count == 2 }, "the token only in the stored body")
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func theJarsCookiesCountAsCredentials(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, kind, scratch.cache())
            let closed = Counted(key: "cookie-closed", policy: CachePolicy(timeToLive: 60))
            let open = Counted(key: "cookie-open", policy: CachePolicy(timeToLive: 60, cachesAuthenticatedRequests: true))
            #expect(Self.seen(try await client.response(for: closed)) == "1 network  ")
            #expect(Self.seen(try await client.response(for: open)) == "1 network  ")
            // The server signs the client in: from now on the jar adds `session=abc` to every request.
            _ = try await client.response(for: Get("/set-cookie"))
            #expect(Self.seen(try await client.response(for: closed)) == "2 network  session=abc", "not answered by the entry stored before the cookie")
            #expect(Self.seen(try await client.response(for: closed)) == "3 network  session=abc", "and not stored")
            #expect(Self.seen(try await client.response(for: open)) == "2 network  session=abc", "another key with the cookie")
            #expect(Self.seen(try await client.response(for: open)) == "2 cache  session=abc")
            _ = try await client.response(for: Get("/set-cookie?value=xyz"))
            #expect(Self.seen(try await client.response(for: open)) == "3 network  session=xyz", "another session, another entry")
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func bodiesAreKeyedByTheirBytes(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, kind, scratch.cache())
            func post(_ bytes: [UInt8]) -> Counted {
                Counted(key: "bytes", policy: CachePolicy(timeToLive: 60), method: .post, body: .data(Data(bytes), contentType: "application/octet-stream"))
            }
            // Both invalid UTF-8: as strings, both would read U+FFFD U+0001.
            let first = try await client.response(for: post([0xFF, 0x01]))
            let other = try await client.response(for: post([0xFE, 0x01]))
            let again = try await client.response(for: post([0xFF, 0x01]))
            #expect([first, other, again].map { "\($0.json["count"].int ?? -1) \($0.source)" } == ["1 network", "2 network", "1 cache"])
        }
    }

    /// An adapter that changes nothing: with it, the key is read back from the `URLRequest` instead of
    /// from what the builder put there.
    struct Unchanged: RequestAdapter {
        func adapt(_ request: inout OutgoingRequest, for original: any Request) throws {}
    }

    @Test(arguments: TransportUnderTest.network, [false, true])
    func aFormBodysVolatileFieldsAreLeftOutOfTheKeyOtherBodiesAreKeyedByTheirBytes(_ kind: TransportUnderTest, adapted: Bool) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, kind, scratch.cache()) { if adapted { $0.adapters = [Unchanged()] } }
            func post(_ text: String, _ type: String = "application/x-www-form-urlencoded") -> Counted {
                Counted(key: "form", policy: CachePolicy(timeToLive: 60, volatileParameters: ["ts"]), method: .post, body: .data(Data(text.utf8), contentType: type))
            }
            var seen: [String] = []
            for request in [post("a=1&ts=1"), post("a=1&ts=2"), post("a=2&ts=1"), post("a=1&ts=1", "application/octet-stream"), post("a=1&ts=9", "application/octet-stream")] {
                let response = try await client.response(for: request)
                seen.append("\(response.json["count"].int ?? -1) \(response.source)")
            }
            // A form's `ts` is volatile; the same bytes as another type are hashed whole, `ts` included.
            #expect(seen == ["1 network", "1 cache", "2 network", "3 network", "4 network"])
        }
    }

    /// A URL filter that returns the URL relative to its folder (`key?ts=1` relative to `…/counter/`).
    struct Relative: URLFilter {
        func filter(_ url: URL, for request: any Request) throws -> URL {
            URL(string: url.lastPathComponent + (url.query.map { "?" + $0 } ?? ""), relativeTo: url.deletingLastPathComponent()) ?? url
        }
    }

    /// The key is the absolute URL on the wire even when a URL filter returns a relative one: two
    /// hosts sharing one cache never share an entry.
    @Test(arguments: TransportUnderTest.network)
    func aRelativeURLFromAFilterIsKeyedByItsAbsoluteURL(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        let cache = scratch.cache()
        try await withServer { one in
            try await withServer { two in
                let request = Counted(key: "relative", policy: CachePolicy(timeToLive: 60, volatileParameters: ["ts"]), query: "?ts=1")
                let first = try await Self.client(one, kind, cache) { $0.urlFilters = [Relative()] }.response(for: request)
                let other = try await Self.client(two, kind, cache) { $0.urlFilters = [Relative()] }.response(for: request)
                let again = try await Self.client(one, kind, cache) { $0.urlFilters = [Relative()] }.response(for: request)
                #expect([first, other, again].map { "\($0.json["count"].int ?? -1) \($0.source)" } == ["1 network", "1 network", "1 cache"])
                #expect(two.hits("/counter/relative") == 1, "the other host was asked")
            }
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aStoredResponseAnswersOnlyARequestThatMatchesItsVary(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, kind, scratch.cache())
            func request(_ language: String?) -> Counted {
                var request = Counted(key: "vary", policy: CachePolicy(timeToLive: 60), query: "?vary=Accept-Language")
                if let language { request.headers["Accept-Language"] = language }
                return request
            }
            var seen: [String] = []
            for language in ["en", "en", "fr", "fr", nil, nil, "en"] {
                let response = try await client.response(for: request(language))
                seen.append("\(response.json["count"].int ?? -1) \(response.source)")
            }
            // One entry per key: each variant replaces the one before it.
            #expect(seen == ["1 network", "1 cache", "2 network", "2 cache", "3 network", "3 cache", "4 network"])

            let star = Counted(key: "star", policy: CachePolicy(timeToLive: 60), query: "?vary=*")
            let sources = [try await client.response(for: star), try await client.response(for: star)].map(\.source)
            #expect(sources == [.network, .network], "Vary: * matches no later request")
        }
    }

    /// A cache whose disk reads wait for `release()` (or a minute).
    final class HeldDisk: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let reads = Box(0)
        var readsStarted: Int { reads.value }
        init(_ cache: ResponseCache) {
            cache.diskReadGate.withLock {
                $0 = { [gate, reads] in
                    reads.mutate { $0 += 1 }
                    _ = gate.wait(timeout: .now() + 60)
                }
            }
        }
        func release() { gate.signal() }
    }

    /// Stores an answer for `request` on disk and returns a new cache on that folder (nothing in memory).
    static func storedOnDisk(_ request: Counted, _ server: LoopbackServer, _ kind: TransportUnderTest, _ scratch: Scratch) async throws -> ResponseCache {
        let writer = scratch.cache()
        _ = try await Self.client(server, kind, writer).response(for: request)
        writer.flush()
        return scratch.cache()
    }

    /// Sends on a thread of its own and says whether `send` returned (it must, with the disk held).
    static func sendReturns(_ client: Dispatcher, _ request: Counted, handle: Box<RequestHandle?>? = nil) async -> Bool {
        let returned = Box(false)
        onOwnThread {
            let sent = client.send(request)
            handle?.mutate { $0 = sent }
            returned.mutate { $0 = true }
        }
        return await eventually(timeout: 20) { returned.value }
    }

    @Test(arguments: TransportUnderTest.network)
    func aSendDoesNotWaitForTheDiskAndTheCachedEventStillComesFirst(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let request = Counted(key: "held", policy: CachePolicy(timeToLive: 60, mode: .cachedThenLoad))
            let cache = try await Self.storedOnDisk(request, server, kind, scratch)
            let disk = HeldDisk(cache)
            let client = Self.client(server, kind, cache)
            let log = EventLog<Counted>()
            client.addObserver(log, for: Counted.self, on: .immediate) { $0.record($1) }
            #expect(await Self.sendReturns(client, request), "send() returned while the disk read was held")
            #expect(await eventually(timeout: 20) { disk.readsStarted == 1 })
            #expect(server.hits("/counter/held") == 1, "nothing sent before the store answered")
            disk.release()
            #expect(await eventually(timeout: 20) { log.events.contains { $0.isTerminal } })
            let kinds = log.events.map { event -> String in
                switch event.kind {
                case .started: "started"
                case .cached(let stored): "cached \(stored.json["count"].int ?? -1) \(stored.source)"
                case .succeeded(let response): "succeeded \(response.json["count"].int ?? -1) \(response.source)"
                default: "other \(event.kind)"
                }
            }
            #expect(kinds == ["started", "cached 1 cache", "succeeded 2 network"])
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aFreshEntryOnDiskAnswersWithoutTheNetworkOnceTheDiskAnswers(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let request = Counted(key: "held-fresh", policy: CachePolicy(timeToLive: 60))
            let cache = try await Self.storedOnDisk(request, server, kind, scratch)
            let disk = HeldDisk(cache)
            let client = Self.client(server, kind, cache)
            let outcome = Box<Response<Counted>?>(nil)
            let returned = Box(false)
            onOwnThread {
                client.send(request) { result in outcome.mutate { $0 = try? result.get() } }
                returned.mutate { $0 = true }
            }
            #expect(await eventually(timeout: 20) { returned.value && disk.readsStarted == 1 })
            #expect(outcome.value == nil)
            disk.release()
            #expect(await eventually(timeout: 20) { outcome.value != nil })
            #expect(outcome.value.map { "\($0.json["count"].int ?? -1) \($0.source) \($0.attempts)" } == "1 cache 0")
            #expect(server.hits("/counter/held-fresh") == 1)
        }
    }

    /// Lets the disk go (twice: the first attempt's read and the retry's) when a retry is decided.
    final class ReleaseOnRetry: EventMonitor {
        let disk: HeldDisk
        let retries = Box(0)
        init(_ disk: HeldDisk) { self.disk = disk }
        func request(_ send: SendContext, willRetry attempt: Int, after delay: TimeInterval, because error: NetworkError) {
            retries.mutate { $0 += 1 }
            disk.release()
            disk.release()
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func theDeadlineWhileTheDiskIsHeldEndsTheAttemptAndTheRetryLooksAgain(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let request = Counted(key: "held-deadline", policy: CachePolicy(timeToLive: 60))
            let cache = try await Self.storedOnDisk(request, server, kind, scratch)
            let disk = HeldDisk(cache)
            let monitor = ReleaseOnRetry(disk)
            // Each attempt may take 30 s; a timeout is retried once, at once. The disk is held until the
            // first attempt's deadline has ended it and the retry is decided, so the first attempt always
            // takes the whole 30 s; the retry's read must fit in as much. It takes milliseconds, but its
            // answer resumes a task, and when the whole suite starts at once on two cores the
            // concurrency pool's queue can hold a new task for seconds (measured: a task queued every
            // 200 ms waited up to 10 s in the first 20 s of the run, 7 s once polls backed off). 15 s
            // was too little in CI while the suite still blocked that pool's threads (child processes,
            // waits); it no longer does.
            let client = Self.client(server, kind, cache) {
                $0.timeout = 30
                $0.retryPolicy = RetryPolicy(maximumAttempts: 2, initialDelay: 0, jitter: 0)
                $0.monitors = [monitor]
            }
            let outcome = Box<Result<Response<Counted>, NetworkError>?>(nil)
            onOwnThread { client.send(request) { result in outcome.mutate { $0 = result } } }
            #expect(await eventually(timeout: 120) { outcome.value != nil })
            #expect(monitor.retries.value == 1, "the first attempt ended at its deadline while the disk was held")
            let response = try #require(try outcome.value?.get())
            #expect("\(response.json["count"].int ?? -1) \(response.source) \(response.attempts)" == "1 cache 0", "the retry was answered by the cache")
            #expect(server.hits("/counter/held-deadline") == 1, "nothing went to the network")
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aCancelWhileTheDiskIsHeldEndsTheSendOnceWithoutTheNetwork(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let request = Counted(key: "held-cancel", policy: CachePolicy(timeToLive: 60, mode: .cachedThenLoad))
            let cache = try await Self.storedOnDisk(request, server, kind, scratch)
            let disk = HeldDisk(cache)
            let hook = HookStageTests.CountingHook()
            let client = Self.client(server, kind, cache) { $0.responseHooks = [hook] }
            let log = EventLog<Counted>()
            client.addObserver(log, for: Counted.self, on: .immediate) { $0.record($1) }
            let handle = Box<RequestHandle?>(nil)
            #expect(await Self.sendReturns(client, request, handle: handle))
            #expect(await eventually(timeout: 20) { disk.readsStarted == 1 })
            handle.value?.cancel()
            // At once: nothing is waited for, however long the disk takes (the read is still held).
            #expect(await eventually(timeout: 20) { log.events.contains { $0.isTerminal } })
            #expect(disk.readsStarted == 1 && cache.answeredLookUps.withLock { $0 } == 0, "ended while the disk was still held")
            disk.release()
            // The late answer has been handled: it changed nothing.
            #expect(await eventually(timeout: 20) { cache.answeredLookUps.withLock { $0 } == 1 })
            #expect(log.events.filter(\.isTerminal).map { $0.error?.isCancelled } == [true], "one terminal event: cancelled")
            #expect(log.events.last?.isTerminal == true)
            #expect(log.events.contains { if case .cached = $0.kind { true } else { false } } == false, "no cached event after the end")
            #expect(server.hits("/counter/held-cancel") == 1, "no request sent")
            #expect(hook.calls.value == 0, "the hooks ran on an entry read for a send that had ended")
        }
    }
}
