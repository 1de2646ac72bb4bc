import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(hangGuard, admission) struct RequestBuildingTests {
    // MARK: Base URL + path

    @Test func aRememberedJoinGivesTheSameURLsAsAFreshOne() throws {
        let base = URL(string: "https://h.example/v2/")!
        let remembering = try #require(URLResolver.JoinBase(base, remembering: true))
        let paths = ["/users/1", "users/1", "/", "", "a/b/", "/list?start=0", "/a b"] + (0..<150).map { "/items/\($0)" }
        for _ in 0..<2 {
            for path in paths {
                let fresh = try URLResolver.resolve(path: path, base: base)
                let remembered = try URLResolver.resolve(path: path, base: base, join: remembering)
                #expect(fresh == remembered, "\(path)")
            }
        }
        // The memory belongs to a base: another configuration's base never sees its URLs.
        var configuration = Configuration { $0.baseURL = base }
        _ = try URLResolver.resolve(path: "/users/1", base: configuration.baseURL, join: configuration.baseJoin)
        configuration.baseURL = URL(string: "https://other.example")
        #expect(try URLResolver.resolve(path: "/users/1", base: configuration.baseURL, join: configuration.baseJoin).host == "other.example")
    }

    @Test(arguments: ["users/1", "/users/1"])
    func baseURLPathIsKeptWhetherOrNotThePathStartsWithSlash(path: String) throws {
        let url = try URLResolver.resolve(path: path, base: URL(string: "https://h.example/v2"))
        #expect(url.absoluteString == "https://h.example/v2/users/1")
    }

    @Test func baseURLWithTrailingSlashDoesNotDoubleIt() throws {
        let url = try URLResolver.resolve(path: "/users/1", base: URL(string: "https://h.example/v2/"))
        #expect(url.absoluteString == "https://h.example/v2/users/1")
    }

    @Test(arguments: [
        ("https://h.example/v2", "", "https://h.example/v2"),
        ("https://h.example/v2", "/", "https://h.example/v2/"),
        ("https://h.example", "", "https://h.example/"),
        ("https://h.example:8443/", "a/b-c_d.e~f", "https://h.example:8443/a/b-c_d.e~f"),
        ("https://h.example/v2?key=k", "users", "https://h.example/v2/users?key=k"),
    ])
    func plainAndSpecialJoinsAgree(base: String, path: String, expected: String) throws {
        #expect(try URLResolver.resolve(path: path, base: URL(string: base)).absoluteString == expected)
    }

    @Test func absolutePathIsUsedAsIs() throws {
        let url = try URLResolver.resolve(path: "http://other.example/x?y=1", base: URL(string: "https://h.example/v2"))
        #expect(url.absoluteString == "http://other.example/x?y=1")
    }

    @Test func queryInPathIsAppendedToBaseQuery() throws {
        let url = try URLResolver.resolve(path: "/list?start=0", base: URL(string: "https://h.example/api?key=k"))
        #expect(url.absoluteString == "https://h.example/api/list?key=k&start=0")
    }

    @Test func spacesAndLonePercentInPathAreEscaped() throws {
        let url = try URLResolver.resolve(path: "/a b/100%/c%20d", base: URL(string: "https://h.example"))
        #expect(url.absoluteString == "https://h.example/a%20b/100%25/c%20d")
    }

    @Test func relativePathWithoutBaseURLIsInvalid() {
        #expect(throws: NetworkError.self) { try URLResolver.resolve(path: "/users/1", base: nil) }
    }

    @Test(arguments: ["ftp://h.example/file", "file:///etc/passwd"])
    func unsupportedSchemesAreInvalid(path: String) {
        #expect(throws: NetworkError.self) { try URLResolver.resolve(path: path, base: nil) }
    }

    @Test func relativeRequestWithoutBaseURLFailsWithInvalidRequestAndSendsNothing() async throws {
        try await withServer { server in
            let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
            let error = await client.result(Echo()).failure
            guard case .invalidRequest(let reason) = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("no base URL"))
            #expect(server.totalRequests == 0)
        }
    }

    @Test func perRequestBaseURLWinsOverConfiguration() async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.baseURL = URL(string: "http://127.0.0.1:9/nowhere") }
            let response = try await client.response(for: Echo(path: "/echo/x", baseURL: server.baseURL))
            #expect(response.json["path"].string == "/echo/x")
        }
    }

    // MARK: Parameters

    @Test func getParametersGoInTheQuerySortedAndEscaped() async throws {
        try await withServer { server in
            let client = makeClient(server)
            let echo = Echo(path: "/echo?pre=1", parameters: ["type": "List", "start": 0, "q": "a b&c", "tags": ["x", "y"], "f": ["k": "v"]])
            let response = try await client.response(for: echo)
            #expect(response.json["query"].string == "pre=1&f%5Bk%5D=v&q=a%20b%26c&start=0&tags%5B%5D=x&tags%5B%5D=y&type=List")
            #expect(response.json["args"]["q"].string == "a b&c")
            #expect(response.json["method"].string == "GET")
        }
    }

    @Test func postParametersDefaultToAFormBody() async throws {
        try await withServer { server in
            let client = makeClient(server)
            let response = try await client.response(for: Echo(method: .post, parameters: ["user": "ada", "pw": "p&ss"]))
            #expect(response.json["form"]["user"].string == "ada")
            #expect(response.json["form"]["pw"].string == "p&ss")
            #expect(response.json["headers"]["Content-Type"].string?.hasPrefix("application/x-www-form-urlencoded") == true)
            #expect(response.json["query"].string == "")
        }
    }

    @Test func configurationCanMakeJSONTheBodyEncoding() async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.bodyEncoding = .json }
            let response = try await client.response(for: Echo(method: .put, parameters: ["id": 9_007_199_254_740_993, "ok": true]))
            #expect(response.json["json"]["id"] == .integer(9_007_199_254_740_993))
            #expect(response.json["json"]["ok"] == .bool(true))
            #expect(response.json["headers"]["Content-Type"].string == "application/json")
        }
    }

    @Test func deleteParametersGoInTheQuery() async throws {
        try await withServer { server in
            let response = try await makeClient(server).response(for: Echo(method: .delete, parameters: ["id": 3]))
            #expect(response.json["method"].string == "DELETE")
            #expect(response.json["query"].string == "id=3")
        }
    }

    @Test func nonObjectParametersForAQueryAreAnInvalidRequest() async throws {
        try await withServer { server in
            let error = await makeClient(server).result(Echo(parameters: ["a", "b"])).failure
            guard case .invalidRequest = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                return
            }
            #expect(server.totalRequests == 0)
        }
    }

    // MARK: Headers and credentials

    @Test func requestHeadersAndAcceptAreSent() async throws {
        try await withServer { server in
            let response = try await makeClient(server).response(for: Echo(headers: ["X-Trace": "t-1"]))
            #expect(response.json["headers"]["X-Trace"].string == "t-1")
            #expect(response.json["headers"]["Accept"].string == "application/json")
        }
    }

    @Test(arguments: ["evil\r\nX-Injected: 1", "line\nfeed", "nul\0byte"])
    func headerValueWithNewlineOrNulIsRejectedBeforeSending(value: String) async throws {
        try await withServer { server in
            let error = await makeClient(server).result(Echo(headers: ["X-Bad": value])).failure
            guard case .invalidRequest(let reason) = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("X-Bad"))
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: ["Bad Name", "Colon:", ""])
    func invalidHeaderNamesAreRejected(name: String) async throws {
        try await withServer { server in
            var headers = HTTPHeaders()
            headers[name] = "v"
            let error = await makeClient(server).result(Echo(headers: headers)).failure
            guard case .invalidRequest = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func credentialsBecomeABasicAuthorizationHeader() async throws {
        try await withServer { server in
            let response = try await makeClient(server).response(for: Echo(credentials: Credentials(user: "ada", password: "s3cret")))
            #expect(response.json["headers"]["Authorization"].string == "Basic YWRhOnMzY3JldA==")
        }
    }

    // MARK: makeURLRequest

    @Test func customURLRequestBypassesPathParametersAndHeaders() async throws {
        try await withServer { server in
            var custom = URLRequest(url: server.url("/echo/custom"))
            custom.httpMethod = "POST"
            custom.httpBody = Data("{\"events\":[1,2]}".utf8)
            custom.setValue("application/json; charset=UTF-8", forHTTPHeaderField: "Content-Type")
            custom.setValue("gzip-test", forHTTPHeaderField: "X-Encoding")
            let response = try await makeClient(server).response(for: Custom(urlRequest: custom))
            #expect(response.json["path"].string == "/echo/custom")
            #expect(response.json["method"].string == "POST")
            #expect(response.json["query"].string == "")
            #expect(response.json["json"]["events"] == [1, 2])
            #expect(response.json["headers"]["X-Encoding"].string == "gzip-test")
        }
    }

    @Test func customURLRequestWithBadSchemeIsInvalid() async throws {
        try await withServer { server in
            let error = await makeClient(server).result(Custom(urlRequest: URLRequest(url: URL(string: "ftp://127.0.0.1/x")!))).failure
            guard case .invalidRequest = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func headerMergeIsCaseInsensitiveAndLaterWins() {
        var headers: HTTPHeaders = ["Content-Type": "a"]
        headers.merge(["content-type": "b", "X-New": "1"])
        #expect(headers["CONTENT-TYPE"] == "b")
        #expect(headers.count == 2)
        headers["x-new"] = nil
        #expect(headers.count == 1)
    }
}

/// A path with a plain query takes the quick join; anything else the full one; both give the same URL.
@Suite struct PathQueryJoinTests {
    @Test(arguments: [
        "/users/1?a=1&b=x:y", "users/1?page=2&sort=name,asc", "/json/1?key=0", "/a?b=c?d", "/a?x=(1)+2!$'*;@",
        "/a?q=a b", "/a?q=%41", "/a?q=ü", "/?a=1", "?a=1", "/a#frag", "/a?b#c",
    ])
    func theQuickJoinGivesWhatTheFullOneGives(_ path: String) throws {
        let base = URL(string: "http://127.0.0.1:8080/v2")!
        let quick = try URLResolver.resolve(path: path, base: base, join: URLResolver.JoinBase(base, remembering: false))
        // A base URL with a query can't take the quick join: the full one answers, the base's query first.
        let full = try URLResolver.resolve(path: path, base: URL(string: "http://127.0.0.1:8080/v2?z=0")!)
        var expected = URLComponents(url: full, resolvingAgainstBaseURL: false)!
        let items = (expected.percentEncodedQueryItems ?? []).filter { $0.name != "z" }
        expected.percentEncodedQueryItems = items.isEmpty ? nil : items
        #expect(quick.absoluteString == expected.url!.absoluteString, "\(path)")
    }
}
