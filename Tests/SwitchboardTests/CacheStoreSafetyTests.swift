import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
@testable import Switchboard
import Testing

/// The store's own guarantees under a hostile or careless use (found by a review of issue 24's change;
/// each failed before its fix): entries of the previous version answer nothing, `removeAll()` wins
/// over a read in flight, a logger may ask the cache anything, no password reaches the disk, a
/// transport of the app's own keeps its cookies' requests out, a late disk read never replaces a newer
/// entry, and no `Set-Cookie` is kept.
@Suite(hangGuard, admission) struct CacheStoreSafetyTests {
    typealias Counted = CacheSafetyTests.Counted
    typealias Scratch = CacheSafetyTests.Scratch
    typealias HeldDisk = CacheSafetyTests.HeldDisk

    static func seen(_ response: Response<Counted>) -> String { CacheSafetyTests.seen(response) }

    /// Writes `entry` the way the previous version of the library did: same "SBC1" format, no `vary`
    /// field (the encoder omits a nil optional), under the key the previous version made.
    static func writePreviousVersionEntry(key: String, url: URL, headers: [String: String], body: String, in scratch: Scratch) {
        let now = Date()
        var entry = CachedEntry(
            key: key, url: url.absoluteString, statusCode: 200, headers: headers, storedAt: now, expiresAt: now.addingTimeInterval(600),
            version: 0, sensitiveData: nil, appVersion: Configuration().appVersion)
        entry.body = Data(body.utf8)
        let writer = scratch.cache()
        writer.store(entry)
        writer.flush()
    }

    // MARK: Entries of an earlier version

    @Test(arguments: TransportUnderTest.network)
    func anEntryThePreviousVersionStoredWithoutAlicesTokenAnswersNothing(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let request = Counted(key: "legacy", policy: CachePolicy(timeToLive: 60))
            let url = server.baseURL.appendingPathComponent("counter/legacy")
            // What 3a27471 stored when alice's adapter put her token on the request: the key left it out.
            Self.writePreviousVersionEntry(
                key: "GET \(url.absoluteString)", url: url, headers: ["Content-Type": "application/json"],
                body: #"{"key":"legacy","count":1,"auth":"Bearer token-of-alice","cookie":""}"#, in: scratch)
            // After the upgrade, signed out (no adapter token): a request with no credentials at all.
            let client = CacheSafetyTests.client(server, kind, scratch.cache())
            let response = try await client.response(for: request)
            #expect(Self.seen(response) == "1 network  ", "an entry stored by the previous version (keyed without alice's token) must not answer")
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func anEntryWhoseVaryFieldsWereNotKeptAnswersNothing(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            var french = Counted(key: "legacy-vary", policy: CachePolicy(timeToLive: 60), query: "?vary=Accept-Language")
            french.headers["Accept-Language"] = "fr"
            let url = URL(string: server.baseURL.absoluteString + "/counter/legacy-vary?vary=Accept-Language")!
            // Under today's key, but as an entry without its `vary` fields (stored for an
            // `Accept-Language: en` request whose response said `Vary: Accept-Language`).
            Self.writePreviousVersionEntry(
                key: CacheKey.version + "GET \(url.absoluteString)", url: url, headers: ["Content-Type": "application/json", "Vary": "Accept-Language"],
                body: #"{"key":"legacy-vary","count":1,"auth":"","cookie":"","language":"en"}"#, in: scratch)
            let client = CacheSafetyTests.client(server, kind, scratch.cache())
            let response = try await client.response(for: french)
            #expect(response.source == .network, "a response that varies on Accept-Language, stored for en, must not answer fr")
        }
    }

    // MARK: The store against its callers

    @Test(arguments: TransportUnderTest.network)
    func removeAllWinsOverADiskReadAlreadyQueued(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let request = Counted(key: "resurrected", policy: CachePolicy(timeToLive: 60))
            let cache = try await CacheSafetyTests.storedOnDisk(request, server, kind, scratch)
            let disk = HeldDisk(cache)
            let client = CacheSafetyTests.client(server, kind, cache)
            let first = Box<Response<Counted>?>(nil)
            onOwnThread { client.send(request) { result in first.mutate { $0 = try? result.get() } } }
            #expect(await eventually(timeout: 20) { disk.readsStarted == 1 })
            cache.removeAll()  // the folder wasn't scanned yet: nothing is marked removed
            disk.release()
            #expect(await eventually(timeout: 20) { first.value != nil })
            // The removed entry answered nothing: the send went to the network, and its answer, which
            // came after removeAll(), is what the cache holds now.
            #expect(first.value.map(Self.seen) == "2 network  ")
            cache.flush()
            #expect(try scratch.files().count == 1 && cache.memoryCount == 1)
            let after = try await client.response(for: request)
            #expect(Self.seen(after) == "2 cache  ", "never the entry removeAll() removed")
        }
    }

    final class StatsLogger: NetworkLogger {
        let cache = Box<ResponseCache?>(nil)
        let lines = Box<[String]>([])
        func log(_ record: LogRecord) {
            // An app's logger that adds the cache's size to what it reports.
            let size = cache.value?.totalSize ?? -1
            lines.mutate { $0.append("\(record.message) (cache: \(size) bytes)") }
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aLoggerThatAsksTheCacheItsSizeWhileAFileIsDroppedDoesNotStopIt(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let request = Counted(key: "corrupt", policy: CachePolicy(timeToLive: 60))
            _ = try await CacheSafetyTests.storedOnDisk(request, server, kind, scratch)
            // Cut the entry file: the next read drops it and logs.
            let name = try #require(FileManager.default.contentsOfDirectory(atPath: scratch.folder.path).first { $0.hasSuffix(".cache") })
            let file = scratch.folder.appendingPathComponent(name)
            try Data(try Data(contentsOf: file).prefix(20)).write(to: file)
            let logger = StatsLogger()
            let cache = ResponseCache(directory: scratch.folder, logger: logger)
            logger.cache.mutate { $0 = cache }
            let client = CacheSafetyTests.client(server, kind, cache)
            let result = Box<Result<Response<Counted>, NetworkError>?>(nil)
            client.send(request) { outcome in result.mutate { $0 = outcome } }
            #expect(await eventually(timeout: 10) { result.value != nil }, "the send ends (from the network)")
            #expect((try? result.value?.get()).map(Self.seen) == "2 network  ")
            let flushed = Box(false)
            onOwnThread {
                cache.flush()
                flushed.mutate { $0 = true }
            }
            #expect(await eventually(timeout: 10) { flushed.value }, "the cache's queue is still alive")
        }
    }

    // MARK: Secrets

    @Test(arguments: TransportUnderTest.network)
    func aPasswordInTheURLIsNeverWrittenToDisk(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let cache = scratch.cache()
            let client = CacheSafetyTests.client(server, kind, cache)
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.user = "alice"
            components.password = "s3cret-password"
            components.path = "/counter/userinfo"
            struct Absolute: Request {
                var path: String
                var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 60, cachesAuthenticatedRequests: true) }
            }
            _ = await client.result(Absolute(path: components.url!.absoluteString))
            cache.flush()
            let texts = try scratch.files().map { String(decoding: $0, as: UTF8.self) }
            #expect(texts.count == 1, "stored (with the opt-in)")
            #expect(texts.allSatisfy { !$0.contains("s3cret-password") }, "the key keeps a hash of the credentials, not the password itself")
        }
    }

    // MARK: Transports of the app's own

    final class Wrapping: Transport {
        let inner: any Transport
        init(_ inner: any Transport) { self.inner = inner }
        func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
            inner.perform(request, options: options, callbacks: callbacks)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aTransportThatDoesntSayWhichCookiesItAddsKeepsItsRequestsOutOfTheCache(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            // An app's own transport (metrics, fault injection) around the package's.
            let wrapped = Wrapping(kind.make([server]))
            let client = CacheSafetyTests.client(server, kind, scratch.cache()) { $0.transport = .using(wrapped) }
            let profile = Counted(key: "profile", policy: CachePolicy(timeToLive: 60))
            _ = try await client.response(for: Get("/set-cookie?value=alice"))
            let alice = try await client.response(for: profile)
            _ = try await client.response(for: Get("/set-cookie?value=bob"))  // alice signs out, bob signs in
            let bob = try await client.response(for: profile)
            #expect(Self.seen(alice) == "1 network  session=alice")
            #expect(Self.seen(bob) == "2 network  session=bob", "bob is never answered with alice's response")
        }
    }

    /// A wrapper that passes the inner transport's cookies on, as ``TransportCookies`` asks.
    final class Forwarding: Transport {
        let inner: any Transport
        init(_ inner: any Transport) { self.inner = inner }
        var addedCookies: TransportCookies { inner.addedCookies }
        func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
            inner.perform(request, options: options, callbacks: callbacks)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aTransportThatPassesItsCookiesOnIsCachedPerSession(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            let wrapped = Forwarding(kind.make([server]))
            let client = CacheSafetyTests.client(server, kind, scratch.cache()) { $0.transport = .using(wrapped) }
            let profile = Counted(key: "forwarded", policy: CachePolicy(timeToLive: 60, cachesAuthenticatedRequests: true))
            var seen: [String] = []
            for value in ["alice", "alice", "bob", "bob"] {
                _ = try await client.response(for: Get("/set-cookie?value=\(value)"))
                seen.append(Self.seen(try await client.response(for: profile)))
            }
            #expect(seen == ["1 network  session=alice", "1 cache  session=alice", "2 network  session=bob", "2 cache  session=bob"])
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aStoredResponseKeepsNoSetCookie(_ kind: TransportUnderTest) async throws {
        let scratch = Scratch()
        try await withServer { server in
            struct SignIn: Request {
                var path: String { "/set-cookie" }  // sets `session=abc`
                var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 60) }
            }
            let cache = scratch.cache()
            let client = CacheSafetyTests.client(server, kind, cache) { $0.cookies = .none }
            let first = try await client.response(for: SignIn())
            let second = try await client.response(for: SignIn())
            #expect(first.source == .network && second.source == .cache)
            #expect(second.headers["Set-Cookie"] == nil, "the stored answer carries no one's session")
            cache.flush()
            let texts = try scratch.files().map { String(decoding: $0, as: UTF8.self) }
            #expect(texts.count == 1 && texts.allSatisfy { !$0.contains("session=abc") })
        }
    }

    // MARK: Races

    @Test func aDiskReadNeverReplacesANewerEntryStoredWhileItRead() async throws {
        let scratch = Scratch()
        let key = "GET http://example.invalid/profile"
        let now = Date()
        func entry(_ text: String, at date: Date) -> CachedEntry {
            var entry = CachedEntry(
                key: key, url: "http://example.invalid/profile", statusCode: 200, headers: ["Content-Type": "application/octet-stream"],
                storedAt: date, expiresAt: date.addingTimeInterval(600), version: 0, sensitiveData: nil, appVersion: "1")
            entry.body = Data(text.utf8) + Data(repeating: 0x20, count: 4 << 10)
            return entry
        }
        let writer = ResponseCache(directory: scratch.folder, memoryByteLimit: 64 << 20, logger: nil)
        writer.store(entry("old", at: now))
        writer.flush()
        let cache = ResponseCache(directory: scratch.folder, memoryByteLimit: 64 << 20, logger: nil)
        _ = cache.directory  // the folder's first check and scan, done
        // The newer entry is stored after the read has decoded the older one, before it keeps it.
        let newer = entry("new", at: now.addingTimeInterval(1))
        let decoded = Box(0)
        cache.diskReadDecodedGate.withLock {
            $0 = {
                decoded.mutate { $0 += 1 }
                cache.store(newer)
            }
        }
        guard case .onDisk(let generation) = cache.lookUp(key) else {
            Issue.record("the entry was in memory before it was read from disk")
            return
        }
        _ = await cache.read(key, generation: generation)
        #expect(decoded.value == 1, "the read decoded the older entry before the store")
        cache.diskReadDecodedGate.withLock { $0 = nil }
        cache.flush()
        let inMemory = cache.entry(for: key)
        #expect(inMemory.map { String(decoding: $0.body.prefix(3), as: UTF8.self) } == "new", "the entry stored last is the one kept")
    }
}
