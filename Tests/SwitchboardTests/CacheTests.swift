import Foundation
import LoopbackServer
import Switchboard
import Testing

/// The response cache against the loopback server: `/counter/:key` answers a count that grows with
/// every request, so a stored answer shows as an old count.
@Suite(hangGuard, admission) struct CacheTests {
    struct Counter: Request {
        var key: String
        var policy: CachePolicy?
        var query = ""
        var credentials: Credentials? = nil
        var path: String { "/counter/\(key)\(query)" }
        var cachePolicy: CachePolicy? { policy }
    }

    /// A cache of its own in a fresh folder, and a logger that keeps what it is told.
    final class Scratch: Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-cache-tests-\(UUID().uuidString)")
        let logger = CapturingLogger()
        var log: [String] { logger.records.value.map(\.message) }
        func cache(memoryCountLimit: Int = 200, diskByteLimit: Int = 128 << 20, directory: URL? = nil, inMemory: Bool = false) -> ResponseCache {
            ResponseCache(directory: inMemory ? nil : (directory ?? folder), memoryCountLimit: memoryCountLimit, diskByteLimit: diskByteLimit, logger: logger)
        }
        deinit { try? FileManager.default.removeItem(at: folder) }
    }

    static func client(
        _ server: LoopbackServer, on kind: TransportUnderTest, _ cache: ResponseCache, appVersion: String = "1.0", _ configure: (inout Configuration) -> Void = { _ in }
    ) -> Dispatcher {
        makeClient(server, on: kind) {
            $0.cache = cache
            $0.appVersion = appVersion
            configure(&$0)
        }
    }

    static func count<R: Request>(_ response: Response<R>?) -> Int? { response?.json["count"].int }

    @Test(arguments: TransportUnderTest.network) func aFreshEntryAnswersWithoutTheNetworkUntilItExpires(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, on: kind, scratch.cache())
            let request = Counter(key: "fresh", policy: CachePolicy(timeToLive: 60))
            let first = try await client.response(for: request)
            let second = try await client.response(for: request)
            #expect(Self.count(first) == 1 && first.source == .network)
            #expect(Self.count(second) == 1 && second.source == .cache && second.attempts == 0)
            #expect(server.hits("/counter/fresh") == 1)
            // A short time to live: once it has passed, the network answers again.
            let brief = Counter(key: "brief", policy: CachePolicy(timeToLive: 0.2))
            _ = try await client.response(for: brief)
            try await Task.sleep(nanoseconds: 400_000_000)
            let third = try await client.response(for: brief)
            #expect(Self.count(third) == 2 && third.source == .network, "expired")
        }
    }

    @Test(arguments: ["version", "sensitive data", "app version"], TransportUnderTest.network)
    func anEntryStoredForAnotherVersionSensitiveDataOrAppVersionIsNotUsed(_ reason: String, _ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let cache = scratch.cache()
            let before = Counter(key: "k", policy: CachePolicy(timeToLive: 60, version: 1, sensitiveData: "user-1"))
            _ = try await Self.client(server, on: kind, cache).response(for: before)
            var after = before
            var appVersion = "1.0"
            switch reason {
            case "version": after.policy?.version = 2
            case "sensitive data": after.policy?.sensitiveData = "user-2"
            default: appVersion = "2.0"
            }
            let response = try await Self.client(server, on: kind, cache, appVersion: appVersion).response(for: after)
            #expect(Self.count(response) == 2 && response.source == .network, "\(reason)")
        }
    }

    @Test(arguments: TransportUnderTest.network) func cachedThenLoadDeliversTheStoredResponseThenTheFreshOne(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, on: kind, scratch.cache())
            let request = Counter(key: "both", policy: CachePolicy(timeToLive: 60, mode: .cachedThenLoad))
            _ = try await client.response(for: request)
            let log = EventLog<Counter>()
            client.addObserver(log, for: Counter.self, on: .immediate) { $0.record($1) }
            let fresh = try await client.response(for: request)
            #expect(Self.count(fresh) == 2 && fresh.source == .network)
            let kinds = log.events.map { event -> String in
                switch event.kind {
                case .started: "started"
                case .cached(let stored): "cached \(stored.json["count"].int ?? 0) \(stored.source)"
                case .succeeded(let response): "succeeded \(response.json["count"].int ?? 0)"
                default: "other"
                }
            }
            #expect(kinds == ["started", "cached 1 cache", "succeeded 2"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func networkElseCacheAnswersFromTheCacheWhenTheServerIsGoneMarkedStale(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        let server = try LoopbackServer.standard()
        let cache = scratch.cache()
        let client = Self.client(server, on: kind, cache)
        let request = Counter(key: "offline", policy: CachePolicy(timeToLive: 60, mode: .networkElseCache))
        let online = try await client.response(for: request)
        #expect(online.source == .network)
        await stopOffPool(server)
        let offline = try await client.response(for: request)
        #expect(Self.count(offline) == 1 && offline.source == .stale)
        // Without a stored entry the failure stands.
        let error = await client.result(Counter(key: "never-stored", policy: CachePolicy(timeToLive: 60, mode: .networkElseCache))).failure
        #expect(error?.isTransport == true, "\(String(describing: error))")
    }

    @Test(arguments: TransportUnderTest.network) func ignoringTheCacheStillStoresAndCachedResponseReadsWithoutSending(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, on: kind, scratch.cache())
            let request = Counter(key: "ignore", policy: CachePolicy(timeToLive: 60))
            #expect(client.cachedResponse(for: request) == nil)
            _ = try await client.response(for: request)
            var ignoring = request
            ignoring.policy?.ignoresCache = true
            #expect(Self.count(try await client.response(for: ignoring)) == 2)
            let stored = client.cachedResponse(for: request)
            #expect(Self.count(stored) == 2 && stored?.source == .cache, "the ignoring send stored its answer")
            #expect(server.hits("/counter/ignore") == 2)
            client.removeCachedResponse(for: request)
            #expect(client.cachedResponse(for: request) == nil)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theKeyCoversTheBaseURLTheFiltersAndTheParametersButNotVolatileOnes(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { one in
            try await withServer { two in
                let cache = scratch.cache()
                let request = Counter(key: "shared", policy: CachePolicy(timeToLive: 60, volatileParameters: ["ts"]))
                _ = try await Self.client(one, on: kind, cache).response(for: request)
                let other = try await Self.client(two, on: kind, cache).response(for: request)
                #expect(other.source == .network, "another base URL, another environment: another entry")
                let filtered = try await Self.client(one, on: kind, cache) { $0.urlFilters = [URLArgumentsFilter(["env": "staging"])] }.response(for: request)
                #expect(filtered.source == .network, "a URL filter changes the key")
                var timestamped = request
                timestamped.query = "?ts=1"
                _ = try await Self.client(one, on: kind, cache).response(for: timestamped)
                timestamped.query = "?ts=2"
                #expect(try await Self.client(one, on: kind, cache).response(for: timestamped).source == .cache, "a volatile parameter is left out")
                timestamped.query = "?ts=2&page=2"
                #expect(try await Self.client(one, on: kind, cache).response(for: timestamped).source == .network)
            }
        }
    }

    struct Tagged: Request {
        var path: String { "/etag/report" }
        var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 0) }
    }

    @Test(arguments: TransportUnderTest.network) func aStaleEntryIsRevalidatedAndA304AnswersWithTheStoredBody(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, on: kind, scratch.cache())
            let first = try await client.response(for: Tagged())
            let second = try await client.response(for: Tagged())
            #expect(first.source == .network && second.source == .revalidated)
            #expect(second.statusCode == 200 && second.json == first.json && second.json["name"] == "report")
            #expect(server.hits("/etag/report") == 2)
        }
    }

    struct Dated: Request {
        var path: String { "/dated" }
        var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 0) }
    }

    /// Revalidation by date alone: the route has no ETag and answers 304 only to an `If-Modified-Since`
    /// equal to its `Last-Modified` (the `/etag` route would answer `If-None-Match` first).
    @Test(arguments: TransportUnderTest.network) func aStaleEntryWithOnlyADateIsRevalidatedByIfModifiedSince(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"
            let asked = Box<[String]>([])
            server.route("GET", "/dated") { request in
                asked.mutate { $0.append(request.header("If-Modified-Since") ?? "-") }
                #expect(request.header("If-None-Match") == nil)
                if request.header("If-Modified-Since") == lastModified { return ServerResponse(status: 304, headers: [("Last-Modified", lastModified)]) }
                return .json(["name": "dated"], headers: [("Last-Modified", lastModified), ("Cache-Control", "no-cache")])
            }
            let client = Self.client(server, on: kind, scratch.cache())
            let first = try await client.response(for: Dated())
            let second = try await client.response(for: Dated())
            #expect(first.source == .network && second.source == .revalidated)
            #expect(second.statusCode == 200 && second.json["name"] == "dated")
            #expect(asked.value == ["-", lastModified])
        }
    }

    @Test(arguments: TransportUnderTest.network) func noStoreIsNeverStoredAndCredentialsOnlyWhenAllowed(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, on: kind, scratch.cache())
            let noStore = Counter(key: "nostore", policy: CachePolicy(timeToLive: 60), query: "?nostore=1")
            _ = try await client.response(for: noStore)
            #expect(try await client.response(for: noStore).source == .network)
            var secret = Counter(key: "secret", policy: CachePolicy(timeToLive: 60), credentials: Credentials(user: "a", password: "b"))
            _ = try await client.response(for: secret)
            #expect(try await client.response(for: secret).source == .network, "not cached without the opt-in")
            secret.policy?.cachesAuthenticatedRequests = true
            _ = try await client.response(for: secret)
            #expect(try await client.response(for: secret).source == .cache)
        }
    }

    // MARK: The store

    @Test(arguments: TransportUnderTest.network) func aCorruptTruncatedOrForeignFileIsAMissDeletedAndLogged(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let cache = scratch.cache()
            let requests = ["corrupt", "truncated", "foreign"].map { Counter(key: $0, policy: CachePolicy(timeToLive: 60)) }
            for request in requests { _ = try await Self.client(server, on: kind, cache).response(for: request) }
            cache.flush()
            let files = try FileManager.default.contentsOfDirectory(atPath: scratch.folder.path).filter { $0.hasSuffix(".cache") }.sorted()
            #expect(files.count == 3)
            let paths = files.map { scratch.folder.appendingPathComponent($0) }
            let contents = try paths.map { try Data(contentsOf: $0) }
            // Find each request's file by its stored key (the URL is in it).
            func file(_ key: String) -> Int { contents.firstIndex { String(decoding: $0, as: UTF8.self).contains("/counter/\(key)") }! }
            var corrupt = contents[file("corrupt")]
            corrupt[corrupt.count - 3] ^= 0xFF
            try corrupt.write(to: paths[file("corrupt")])
            try contents[file("truncated")].prefix(contents[file("truncated")].count - 10).write(to: paths[file("truncated")])
            try contents[file("corrupt")].write(to: paths[file("foreign")])  // another key's entry under this name

            let fresh = scratch.cache()  // nothing in memory: every read goes to disk
            for request in requests {
                let response = try await Self.client(server, on: kind, fresh).response(for: request)
                #expect(response.source == .network && Self.count(response) == 2, "\(request.key)")
            }
            #expect(scratch.log.filter { $0.contains("not a usable entry") }.count == 3, "\(scratch.log)")
            fresh.flush()
            let after = try FileManager.default.contentsOfDirectory(atPath: scratch.folder.path).filter { $0.hasSuffix(".cache") }
            #expect(after.count == 3, "each replaced by the fresh answer")
            let permissions = try FileManager.default.attributesOfItem(atPath: scratch.folder.appendingPathComponent(after[0]).path)[.posixPermissions] as? NSNumber
            #expect(permissions?.intValue == 0o600)
        }
    }

    @Test(arguments: TransportUnderTest.network) func concurrentWritersOfOneKeyLeaveOneWholeEntry(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let cache = scratch.cache()
            let client = Self.client(server, on: kind, cache) { $0.coalescesDuplicates = false }  // sixteen writers, not one
            let request = Counter(key: "race", policy: CachePolicy(timeToLive: 60, ignoresCache: true))
            let counts = try await withThrowingTaskGroup(of: Int?.self) { group in
                for _ in 0..<16 { group.addTask { Self.count(try await client.response(for: request)) } }
                return try await group.reduce(into: [Int?]()) { $0.append($1) }
            }
            // Sixteen transfers, each answered with its own count: sixteen writers of one key.
            #expect(counts.compactMap { $0 }.sorted() == Array(1...16))
            cache.flush()
            let reread = try #require(Self.client(server, on: kind, scratch.cache()).cachedResponse(for: Counter(key: "race", policy: CachePolicy(timeToLive: 60))))
            // One whole entry: one writer's response, its body intact (a torn file would not parse, or
            // would be dropped as corrupt).
            let stored = try #require(Self.count(reread))
            #expect(counts.contains(stored), "the entry is one writer's answer")
            #expect(reread.json["key"] == "race" && reread.json["auth"] == "")
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.folder.path).filter { $0.hasPrefix(".") }.isEmpty, "no temporary file left")
        }
    }

    @Test(arguments: TransportUnderTest.network) func anUnwritableDirectoryLeavesTheCacheInMemoryWithAWarning(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try FileManager.default.createDirectory(at: scratch.folder, withIntermediateDirectories: true)
        let blocker = scratch.folder.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: blocker)
        try await withServer { server in
            let cache = scratch.cache(directory: blocker.appendingPathComponent("cache"))  // a folder under a file
            let client = Self.client(server, on: kind, cache)
            let request = Counter(key: "memory", policy: CachePolicy(timeToLive: 60))
            _ = try await client.response(for: request)
            #expect(try await client.response(for: request).source == .cache)
            #expect(cache.directory == nil)
            #expect(scratch.log.contains { $0.contains("caching in memory only") })
        }
    }

    @Test(arguments: TransportUnderTest.network) func theLeastRecentlyUsedEntryGoesFirst(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let client = Self.client(server, on: kind, scratch.cache(memoryCountLimit: 2, inMemory: true))
            let (a, b, c) = ["a", "b", "c"].map { Counter(key: "lru-\($0)", policy: CachePolicy(timeToLive: 60)) }.splat
            _ = try await client.response(for: a)
            _ = try await client.response(for: b)
            #expect(try await client.response(for: a).source == .cache)  // a is now the most recent
            _ = try await client.response(for: c)  // evicts b
            #expect(try await client.response(for: a).source == .cache)
            #expect(try await client.response(for: b).source == .network)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theDiskLimitEvictsTheOldestFilesAndManagementWorks(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let cache = scratch.cache(diskByteLimit: 1_000)
            let client = Self.client(server, on: kind, cache)
            for index in 0..<6 { _ = try await client.response(for: Counter(key: "disk-\(index)", policy: CachePolicy(timeToLive: 0.3))) }
            cache.flush()
            #expect(cache.totalSize <= 1_000 && cache.totalSize > 0)
            let files = try FileManager.default.contentsOfDirectory(atPath: scratch.folder.path).filter { $0.hasSuffix(".cache") }
            #expect(files.count < 6, "older files evicted")
            try await Task.sleep(nanoseconds: 400_000_000)
            cache.removeExpired()
            cache.flush()
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.folder.path).filter { $0.hasSuffix(".cache") }.isEmpty)

            _ = try await client.response(for: Counter(key: "versioned", policy: CachePolicy(timeToLive: 60)))
            #expect(cache.clearIfVersionChanged("1.0") == false, "the first version given clears nothing worth saying")
            #expect(cache.clearIfVersionChanged("1.0") == false)
            #expect(cache.clearIfVersionChanged("1.1") == true)
            #expect(cache.totalSize == 0 && cache.memoryCount == 0)
            _ = try await client.response(for: Counter(key: "again", policy: CachePolicy(timeToLive: 60)))
            cache.removeAll()
            cache.flush()
            #expect(cache.totalSize == 0)
        }
    }
}

extension Array {
    /// The first three elements as a tuple.
    var splat: (Element, Element, Element) { (self[0], self[1], self[2]) }
}
