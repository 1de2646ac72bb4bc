import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

/// Where response hooks sit in the pipeline (stage 8): a hook's verdict on a success comes before the
/// retry decision and the cache, so a response a hook rejects is a failed attempt, never stored.
/// (Until the pipeline was split into stages, hooks ran once on the final result, after the cache had
/// stored the response: both tests below failed then.)
@Suite(hangGuard, admission) struct HookStageTests {
    struct Counter: Request {
        var key: String
        var path: String { "/counter/\(key)" }
        var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 600) }
    }

    /// Rejects the first answer of `/counter/:key` (count 1).
    struct RejectsFirst: ResponseHook {
        func didSucceed(_ response: ResponseContext) throws(NetworkError) {
            if response.json["count"] == 1 { throw .api(APIError(code: "first", message: "not yet", response: response.errorResponse)) }
        }
    }

    /// Retries once after an API error, and keeps what it was asked about.
    final class RetriesAPIErrors: RequestInterceptor {
        let seen = Box<[NetworkError]>([])
        func retry(_ context: RetryContext) async -> RetryDecision {
            seen.mutate { $0.append(context.error) }
            return context.error.apiError != nil && context.attempt == 1 ? .retry : .doNotRetry
        }
    }

    @Test(arguments: TransportUnderTest.network) func aResponseAHookRejectsIsNotStoredInTheCache(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let cache = ResponseCache(directory: nil, logger: nil)
            let client = makeClient(server, on: kind) {
                $0.cache = cache
                $0.responseHooks = [RejectsFirst()]
            }
            let key = "hook-\(UUID().uuidString)"
            let first = await client.result(Counter(key: key)).failure
            #expect(first?.apiError?.message == "not yet")
            #expect(client.cachedResponse(for: Counter(key: key)) == nil, "the rejected answer was stored")
            // The next answer passes and is stored; the third send is answered by it.
            #expect(try await client.response(for: Counter(key: key)).json["count"] == 2)
            let third = try await client.response(for: Counter(key: key))
            #expect(third.json["count"] == 2 && third.source == .cache)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theRetryDecisionSeesAHooksRejection(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let interceptor = RetriesAPIErrors()
            let client = makeClient(server, on: kind) {
                $0.responseHooks = [RejectsFirst()]
                $0.interceptors = [interceptor]
            }
            let response = try await client.response(for: Get("/counter/retry-\(UUID().uuidString)"))
            #expect(response.json["count"] == 2)
            #expect(response.attempts == 2)
            #expect(interceptor.seen.value.map { $0.apiError?.message } == ["not yet"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func aMonitorsDidDecodeSeesTheHooksVerdict(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let monitor = CallRecorder()
            let client = makeClient(server, on: kind) {
                $0.responseHooks = [RejectsFirst()]
                $0.monitors = [monitor]
                $0.retryPolicy = RetryPolicy(maximumAttempts: 1)
            }
            let failure = await client.result(Get("/counter/monitor-\(UUID().uuidString)")).failure
            #expect(failure?.apiError?.message == "not yet")
            #expect(await eventually { monitor.calls.value.last == "didDeliver" })
            // A 200 the hook rejected: the attempt's outcome, as the retry decision saw it, is the hook's error.
            #expect(monitor.calls.value == ["start", "adapt1", "receive1:200", "decode1:error", "finish:error", "willDeliver", "didDeliver"])
        }
    }

    /// Counts its calls; rejects an answer whose count is `rejected`.
    final class CountingHook: ResponseHook {
        let calls = Box(0)
        let rejected = Box<Int?>(nil)
        func didSucceed(_ response: ResponseContext) throws(NetworkError) {
            calls.mutate { $0 += 1 }
            if let rejected = rejected.value, response.json["count"].int == rejected {
                throw .api(APIError(code: "rejected", message: "count \(rejected)", response: response.errorResponse))
            }
        }
    }

    /// A client with a cache in memory and a counting hook.
    static func counted(_ server: LoopbackServer, on kind: TransportUnderTest) -> (Dispatcher, CountingHook) {
        let hook = CountingHook()
        let client = makeClient(server, on: kind) {
            $0.cache = ResponseCache(directory: nil, logger: nil)
            $0.responseHooks = [hook]
        }
        return (client, hook)
    }

    struct Cached: Request {
        var path: String
        var policy: CachePolicy
        var cachePolicy: CachePolicy? { policy }
    }

    /// A stored entry kept only as the offline fallback meets the hooks when it answers, not when it is
    /// looked up: once per answer. (Before, every lookup ran the hooks on the entry, and the fallback ran
    /// them again: 3 calls for the second send, 5 for the third.)
    @Test(arguments: TransportUnderTest.network) func theHooksRunOncePerAnswerUnderNetworkElseCache(_ kind: TransportUnderTest) async throws {
        let server = try LoopbackServer.standard()
        let (client, hook) = Self.counted(server, on: kind)
        let request = Cached(path: "/counter/fallback-\(UUID().uuidString)", policy: CachePolicy(timeToLive: 600, mode: .networkElseCache))
        #expect(try await client.response(for: request).source == .network)
        #expect(hook.calls.value == 1)
        #expect(try await client.response(for: request).source == .network)
        #expect(hook.calls.value == 2, "the stored entry met the hooks without answering")
        await stopOffPool(server)
        let offline = try await client.response(for: request)
        #expect(offline.source == .stale && offline.json["count"] == 2)
        #expect(hook.calls.value == 3)
    }

    /// The fallback is checked by the hooks: one they reject leaves the network's failure standing.
    @Test(arguments: TransportUnderTest.network) func aFallbackTheHooksRejectLeavesTheNetworksFailure(_ kind: TransportUnderTest) async throws {
        let server = try LoopbackServer.standard()
        let (client, hook) = Self.counted(server, on: kind)
        let request = Cached(path: "/counter/fallback-\(UUID().uuidString)", policy: CachePolicy(timeToLive: 600, mode: .networkElseCache))
        _ = try await client.response(for: request)
        await stopOffPool(server)
        hook.rejected.mutate { $0 = 1 }
        let error = await client.result(request).failure
        #expect(error?.isTransport == true, "\(String(describing: error))")
    }

    /// A 304's answer is the stored body, seen by the hooks once.
    @Test(arguments: TransportUnderTest.network) func aRevalidatedAnswerMeetsTheHooksOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let (client, hook) = Self.counted(server, on: kind)
            let request = Cached(path: "/etag/hooked", policy: CachePolicy(timeToLive: 0))
            _ = try await client.response(for: request)
            #expect(try await client.response(for: request).source == .revalidated)
            #expect(hook.calls.value == 2)
        }
    }

    /// A fresh entry the hooks reject is a miss: the network answers, and its answer replaces the entry.
    @Test(arguments: TransportUnderTest.network) func aFreshEntryTheHooksRejectIsAMiss(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let (client, hook) = Self.counted(server, on: kind)
            let request = Cached(path: "/counter/fresh-\(UUID().uuidString)", policy: CachePolicy(timeToLive: 600))
            #expect(try await client.response(for: request).json["count"] == 1)
            #expect(try await client.response(for: request).source == .cache)
            hook.rejected.mutate { $0 = 1 }
            let next = try await client.response(for: request)
            #expect(next.source == .network && next.json["count"] == 2)
            #expect(try await client.response(for: request).json["count"] == 2, "the new answer replaced the rejected entry")
            #expect(server.hits(request.path) == 2)
        }
    }

    /// Under cached-then-load an early answer the hooks reject is not delivered; the network's is.
    @Test(arguments: TransportUnderTest.network) func anEarlyAnswerTheHooksRejectIsNotDelivered(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let (client, hook) = Self.counted(server, on: kind)
            let request = Cached(path: "/counter/early-\(UUID().uuidString)", policy: CachePolicy(timeToLive: 600, mode: .cachedThenLoad))
            _ = try await client.response(for: request)
            hook.rejected.mutate { $0 = 1 }
            let log = EventLog<Cached>()
            client.addObserver(log, for: Cached.self, on: .immediate) { $0.record($1) }
            _ = try await client.response(for: request)
            let kinds = log.events.map { event -> String in
                switch event.kind {
                case .cached: "cached"
                case .succeeded(let response): "succeeded \(response.json["count"].int ?? 0)"
                default: "other"
                }
            }
            #expect(kinds == ["other", "succeeded 2"])
        }
    }

    /// Read from disk (a new cache over the folder another one wrote), a fresh entry meets the hooks
    /// once; one they reject is a miss, and the network's answer replaces it.
    @Test(arguments: TransportUnderTest.network) func aFreshEntryReadFromDiskMeetsTheHooksOnce(_ kind: TransportUnderTest) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-hook-disk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withServer { server in
            let request = Cached(path: "/counter/disk-\(UUID().uuidString)", policy: CachePolicy(timeToLive: 600))
            let writer = ResponseCache(directory: folder, logger: nil)
            _ = try await makeClient(server, on: kind) { $0.cache = writer }.response(for: request)
            writer.flush()
            func reader(_ hook: CountingHook) -> Dispatcher {
                makeClient(server, on: kind) {
                    $0.cache = ResponseCache(directory: folder, logger: nil)
                    $0.responseHooks = [hook]
                }
            }
            let accepting = CountingHook()
            let hit = try await reader(accepting).response(for: request)
            #expect(hit.source == .cache && hit.json["count"] == 1)
            #expect(accepting.calls.value == 1)
            let rejecting = CountingHook()
            rejecting.rejected.mutate { $0 = 1 }
            let miss = try await reader(rejecting).response(for: request)
            #expect(miss.source == .network && miss.json["count"] == 2)
            #expect(rejecting.calls.value == 2, "once on the stored entry, once on the network's answer")
        }
    }
}
