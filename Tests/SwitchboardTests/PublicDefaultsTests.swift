import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

/// What each public default means, pinned: a release that changes one must change this test, and say
/// so in CHANGELOG's "Breaking" (two defaults changed silently before: `Request.retryPolicy` moved, and
/// `acceptingContentTypes([])` flipped from any to none).
@Suite(hangGuard, admission) struct PublicDefaultsTests {
    struct Plain: Request { var path: String { "/echo" } }
    struct Posting: Request {
        var method: HTTPMethod { .post }
        var path: String { "/echo" }
        var parameters: JSON? { ["a": 1] }
    }

    @Test func theConfigurationsDefaults() {
        let configuration = Configuration()
        #expect(configuration.baseURL == nil)
        #expect(configuration.timeout == 60)
        #expect(configuration.idleTimeout == 30)
        #expect(configuration.maximumConnectionsPerHost == 6)
        #expect(configuration.maximumResponseSize == 64 << 20)
        #expect(configuration.acceptableStatusCodes == .success)
        #expect(configuration.acceptableContentTypes == ["application/json", "text/json", "text/javascript"])
        #expect(configuration.bodyEncoding == .form)
        #expect(configuration.bodyCompression == .none)
        #expect(configuration.jsonCoding.outputFormatting == [.sortedKeys])
        #expect(configuration.retryPolicy == .none)
        #expect(configuration.logMode == .off)
        #expect(configuration.coalescesDuplicates)
        #expect(configuration.urlFilters.isEmpty && configuration.adapters.isEmpty && configuration.interceptors.isEmpty)
        #expect(configuration.responseHooks.isEmpty && configuration.monitors.isEmpty)
        #expect(configuration.multipartMemoryThreshold == 10 << 20)
        #expect(configuration.defaultHeaders.isEmpty)
        #expect(configuration.redirects == .default)
        #expect(configuration.redactedNames.isEmpty)
        if case .inMemory = configuration.cookies {} else { Issue.record("cookies are kept in memory by default") }
        if case .system = configuration.serverTrust {} else { Issue.record("the system's trust by default") }
        if case .environment = configuration.proxy {} else { Issue.record("the proxy comes from the environment by default") }
        #expect(configuration.transport.name == TransportFactory.urlSession.name, "URLSession by default")
        if case .deferredToDate = configuration.jsonCoding.dateDecoding {} else { Issue.record("dates decode as Foundation's default") }
        if case .useDefaultKeys = configuration.jsonCoding.keyDecoding {} else { Issue.record("keys decode as they are") }
        if case .useDefaultKeys = configuration.jsonCoding.keyEncoding {} else { Issue.record("keys encode as they are") }
        #expect(BodyCompression.gzip() == .gzip(minimumSize: 1024, level: 6))
        if case .main = configuration.callbackQueue {} else { Issue.record("the callback queue is the main queue by default") }
    }

    @Test func aRequestsDefaults() {
        let request = Plain()
        #expect(request.method == .get)
        #expect(Plain.Value.self == JSON.self, "a request without Value gets JSON")
        #expect(request.responseFormat == .json)
        #expect(request.parameters == nil && request.body == nil && request.parameterEncoding == nil)
        #expect(request.bodyCompression == nil, "nil: the configuration's")
        #expect(request.timeout == nil, "nil: the configuration's")
        #expect(request.idleTimeout == nil, "nil: the configuration's")
        #expect(request.validation.statusCodes == nil && request.validation.contentTypes == nil && request.validation.shape == nil, "the configuration's rules")
        #expect(request.cachePolicy == nil)
        #expect(request.coalescesDuplicates, "GET coalesces")
        #expect(!Posting().coalescesDuplicates, "POST doesn't")
        #expect(!request.reportsProgress)
        #expect(!request.useCDN)
        #expect(request.pipeline.retryPolicy == nil, "nil: the configuration's retry policy")
        #expect(request.pipeline.usesConfigurationResponseHooks)
    }

    /// The defaults' meanings, sent: GET parameters in the query, POST parameters as a form body,
    /// an empty accepted content-type set accepts none, a 404 fails, one attempt.
    @Test(arguments: TransportUnderTest.network) func theDefaultsMeanWhatTheySay(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let posted = try await client.response(for: Posting()).json
            #expect(posted["headers"]["Content-Type"] == "application/x-www-form-urlencoded; charset=utf-8")
            #expect(posted["form"]["a"] == "1")
            #expect(posted["contentEncoding"] == "", "no compression by default")
            let none = await client.result(Get("/echo").with(\.validation, Validation.default.acceptingContentTypes([])))
            guard case .failure(.unacceptableContentType) = none else {
                Issue.record("an empty set accepts no content type, got \(none)")
                return
            }
            // A 503 is what a retry policy would retry: by default, nothing is.
            let unavailable = await client.result(Get("/status/503"))
            #expect(unavailable.failure?.statusCode == 503)
            #expect(server.hits("/status/503") == 1, "no retry by default")
        }
    }
}
