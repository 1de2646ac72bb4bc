import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

/// Where response hooks sit in the pipeline (stage 8): a hook's verdict on a success comes before the
/// retry decision and the cache, so a response a hook rejects is a failed attempt, never stored.
/// (Until the pipeline was split into stages, hooks ran once on the final result, after the cache had
/// stored the response: both tests below failed then.)
@Suite(timeLimit(minutes: 1)) struct HookStageTests {
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
}
