import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// The cookie jar's rules, the same on every transport with a jar (``CookiePolicy/inMemory``): which
/// response heads store cookies, which requests carry them. On Linux the URLSession transport keeps the
/// jar itself; FoundationNetworking's own handling broke the first three.
@Suite(hangGuard, admission) struct CookieJarTests {
    static func request(_ url: URL, headers: [String: String] = [:], handlesCookies: Bool = true) -> TransportRequest {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpShouldHandleCookies = handlesCookies
        return TransportRequest(request)
    }

    /// The `Cookie` field the server saw on `/echo` from `transport`.
    static func cookieSent(_ transport: any Transport, _ server: LoopbackServer, headers: [String: String] = [:], handlesCookies: Bool = true) async -> String? {
        let echoed = await transfer(transport, request(server.url("/echo"), headers: headers, handlesCookies: handlesCookies))
        #expect(echoed.error == nil, "\(String(describing: echoed.error))")
        return echoed.json["headers"]["Cookie"].string
    }

    /// The `name=value` pairs of a `Cookie` field, sorted.
    static func pairs(_ field: String?) -> [String] {
        (field ?? "").split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.sorted()
    }

    /// The names of the cookies in a `Cookie` field, sorted.
    static func names(_ field: String?) -> [String] {
        (field ?? "").split(separator: ";").compactMap { $0.split(separator: "=").first?.trimmingCharacters(in: .whitespaces) }.sorted()
    }

    /// Each `Set-Cookie` line is stored, its name in any case (FoundationNetworking's own handling
    /// missed `set-cookie`). One spelling a response: FoundationNetworking's `HTTPURLResponse` keeps
    /// the lines of only one of the spellings of a name (docs/LinuxNotes.md).
    @Test(arguments: TransportUnderTest.network) func everySetCookieLineIsStoredWhateverTheCaseOfItsName(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let json = ("Content-Type", "application/json")
            server.route(nil, "/lower-case-cookies") { _ in
                ServerResponse(status: 200, headers: [json, ("set-cookie", "lower=1; Path=/"), ("set-cookie", "other=2; Path=/")], body: .data(Data("{}".utf8)))
            }
            server.route(nil, "/many-cookies") { _ in
                ServerResponse(
                    status: 200,
                    headers: [
                        json, ("Set-Cookie", "first=1; Path=/"), ("Set-Cookie", "no-equals-sign"), ("Set-Cookie", "=; Path=/"),
                        ("Set-Cookie", "second=2; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Path=/"),
                    ],
                    body: .data(Data("{}".utf8)))
            }
            let transport = kind.make([server])
            for path in ["/lower-case-cookies", "/many-cookies"] {
                let set = await transfer(transport, Self.request(server.url(path)))
                #expect(set.response?.httpResponse.statusCode == 200, "\(path): \(String(describing: set.error))")
            }
            let sent = await Self.cookieSent(transport, server)
            #expect(Self.pairs(sent) == ["first=1", "lower=1", "other=2", "second=2"], "\(String(describing: sent))")
        }
    }

    /// A `Set-Cookie` line that is not a cookie is dropped alone: the lines around it keep their values
    /// (on URLSession the lines arrive joined with ", ", and are split again).
    @Test(arguments: TransportUnderTest.network) func aLineThatIsNotACookieSpoilsNoOther(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/junk-cookies") { _ in
                ServerResponse(
                    status: 200,
                    headers: [
                        ("Content-Type", "application/json"), ("Set-Cookie", "sid=1; Path=/"), ("Set-Cookie", "junk"), ("Set-Cookie", "a@b=2; Path=/"),
                        ("Set-Cookie", "late=3; Expires=Wednesday, 21-Oct-2099 07:28:00 GMT; Path=/"), ("Set-Cookie", "tail=4"),
                    ],
                    body: .data(Data("{}".utf8)))
            }
            let transport = kind.make([server])
            _ = await transfer(transport, Self.request(server.url("/junk-cookies")))
            let sent = await Self.cookieSent(transport, server)
            #expect(Self.pairs(sent) == ["a@b=2", "late=3", "sid=1", "tail=4"], "\(String(describing: sent))")
        }
    }

    /// The cookies of a 3xx that can't be followed (no `Location`) are kept; those of a head whose
    /// framing is broken are not, redirect or not.
    @Test(arguments: TransportUnderTest.network) func aRedirectWithoutALocationStoresAndABrokenHeadDoesNot(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/nowhere") { _ in ServerResponse(status: 302, headers: [("Set-Cookie", "nowhere=1; Path=/")], body: .data(Data())) }
            for status in [200, 302] {
                server.route(nil, "/broken-\(status)") { _ in
                    ServerResponse(
                        status: 200,
                        body: .raw(Data("HTTP/1.1 \(status) X\r\nLocation: /echo\r\nContent-Length: 0x\r\nSet-Cookie: broken\(status)=1; Path=/\r\n\r\n".utf8)))
                }
            }
            let transport = kind.make([server])
            _ = await transfer(transport, Self.request(server.url("/nowhere")))
            for status in [200, 302] {
                let broken = await transfer(transport, Self.request(server.url("/broken-\(status)")))
                guard case .malformedResponse? = broken.error else {
                    Issue.record("\(status): \(String(describing: broken.error))")
                    continue
                }
            }
            #expect(await Self.cookieSent(transport, server) == "nowhere=1")
        }
    }

    /// A redirect to another host carries that host's cookies from the jar, whether the transport
    /// follows it in one task or, on URLSession, in a new one (a body to send again, credentials to
    /// answer a challenge with); the app's own `Cookie`, for the first host, is dropped there. The hop
    /// after it carries the jar as it is then: the cookies that host's redirect just set.
    @Test(arguments: TransportUnderTest.network) func aHopToAnotherHostCarriesThatHostsCookies(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let seen = Box<[String]>([])
            server.route(nil, "/set-then-redirect") { request in
                seen.mutate { $0.append(request.header("Cookie") ?? "-") }
                return ServerResponse(
                    status: 302, headers: [("Location", "/echo"), ("Set-Cookie", "session=new; Path=/"), ("Set-Cookie", "fresh=1; Path=/")], body: .data(Data()))
            }
            let other = "http://localhost:\(server.port)"
            let transport = kind.make([server])
            let ways: [(code: Int, method: String, body: TransferBody?, credentials: Credentials?)] = [
                (302, "GET", nil, nil), (302, "GET", nil, Credentials(user: "ada", password: "pw")), (307, "POST", .data(Data("x".utf8)), nil),
            ]
            for way in ways {
                _ = await transfer(transport, Self.request(try #require(URL(string: "\(other)/set-cookie"))))
                var request = URLRequest(url: server.url("/redirect/\(way.code)?to=\(other)/set-then-redirect"))
                request.httpMethod = way.method
                request.setValue("mine=1", forHTTPHeaderField: "Cookie")
                let record = await transfer(
                    transport, TransportRequest(request, body: way.body), options: TransferOptions(timeout: 10, credentials: way.credentials))
                let label = "\(way.code) \(way.method), credentials: \(way.credentials != nil)"
                // (`fresh` is in the jar from the second way on.)
                #expect(Self.pairs(seen.value.last).filter { $0 != "fresh=1" } == ["session=abc"], "\(label): the other host's cookies, not the app's")
                #expect(Self.pairs(record.json["headers"]["Cookie"].string) == ["fresh=1", "session=new"], "\(label): the jar as the redirect left it")
            }
        }
    }

    /// The lines FoundationNetworking joined are split again at each ", " but inside an `Expires` date,
    /// in one pass over them whatever a server sends.
    @Test func joinedSetCookieLinesAreSplitOutsideDates() {
        let cases: [(joined: String, lines: [String])] = [
            ("sid=1; Path=/, junk, a@b=2", ["sid=1; Path=/", "junk", "a@b=2"]),
            ("a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Path=/, b=2", ["a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Path=/", "b=2"]),
            ("a=1; expires = Wednesday, 21-Oct-99 07:28:00 GMT, b=2", ["a=1; expires = Wednesday, 21-Oct-99 07:28:00 GMT", "b=2"]),
            ("x=1; Expires=Wed, a@b=2", ["x=1; Expires=Wed", "a@b=2"]),
            ("day=Wed, 1=2", ["day=Wed", "1=2"]),
            ("", [""]),
        ]
        for (joined, lines) in cases { #expect(SessionCookies.lines(joined) == lines, "\(joined)") }
        // A day's name in every line starts no date: each line stays a line.
        let many = Array(repeating: "x;Expires=Wed", count: 20_000)
        #expect(SessionCookies.lines(many.joined(separator: ", ")) == many)
    }

    @Test(arguments: TransportUnderTest.network) func aChallengesOwnCookiesAreKeptWhenItIsAnswered(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/guarded") { request in
                guard request.header("Authorization") != nil else {
                    return ServerResponse(
                        status: 401, headers: [("WWW-Authenticate", #"Basic realm="jar""#), ("Set-Cookie", "challenged=1; Path=/")],
                        body: .data(Data()))
                }
                return .json(["cookie": request.header("Cookie") ?? ""])
            }
            let transport = kind.make([server])
            let answered = await transfer(
                transport, Self.request(server.url("/guarded")), options: TransferOptions(timeout: 10, credentials: Credentials(user: "ada", password: "pw")))
            #expect(answered.response?.httpResponse.statusCode == 200, "\(String(describing: answered.error))")
            #expect(await Self.cookieSent(transport, server) == "challenged=1")
        }
    }

    /// A cookie in the jar whose name or value holds a control character (put there by the app, or by
    /// a server's `Set-Cookie` with a bare CR) is never sent: a CR or LF would end the `Cookie` line and
    /// add a field of its own, a NUL would cut it short. The jar's other cookies still go.
    @Test(arguments: TransportUnderTest.network) func aCookieWithAControlCharacterIsLeftOutAndTheOthersGo(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/set-broken-cookie") { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "application/json"), ("Set-Cookie", "served=1\rX-Served: yes; Path=/")], body: .data(Data("{}".utf8)))
            }
            let transport = kind.make([server])
            let jar = try #require(transport.addedCookies.jar)
            let planted = [("good", "1"), ("planted", "1\r\nX-Injected: yes"), ("nul", "a\u{0}b"), ("bell", "a\u{7}b"), ("tab", "a\tb"), ("bad\nname", "1")]
            for (name, value) in planted {
                jar.setCookie(try #require(HTTPCookie(properties: [.name: name, .value: value, .path: "/", .domain: server.baseURL.host!])))
            }
            let set = await transfer(transport, Self.request(server.url("/set-broken-cookie")))
            #expect(set.error == nil, "\(String(describing: set.error))")
            #expect(jar.cookies?.contains { $0.name == "served" } == true, "the server's cookie is in the jar, and is not sent")
            let echoed = await transfer(transport, Self.request(server.url("/echo")))
            let headers = echoed.json["headers"]
            #expect(headers["X-Injected"] == .null, "no field of a cookie's making: \(headers)")
            #expect(Self.pairs(headers["Cookie"].string) == ["good=1", "tab=a\tb"], "\(headers)")
        }
    }

    /// The jar on Linux matches a cookie to a request by host alone; the transports apply the rest of
    /// RFC 6265: a `Secure` cookie never goes over plain HTTP, and a cookie goes only to its path and
    /// below.
    @Test(arguments: TransportUnderTest.network) func aCookieGoesOnlyWhereItMay(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let jar = try #require(transport.addedCookies.jar)
            let host = server.baseURL.host!
            func plant(_ name: String, path: String, secure: Bool = false) throws {
                var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: "1", .path: path, .domain: host]
                if secure { properties[.secure] = "TRUE" }
                jar.setCookie(try #require(HTTPCookie(properties: properties)))
            }
            try plant("root", path: "/")
            try plant("exact", path: "/echo")
            try plant("beside", path: "/ech")
            try plant("below", path: "/echo/")
            try plant("elsewhere", path: "/admin")
            try plant("secure", path: "/", secure: true)
            #expect(jar.cookies(for: server.url("/echo"))?.count == 6, "the jar holds them all for the host")
            #expect(Self.names(await Self.cookieSent(transport, server)) == ["exact", "root"])
            #expect(jar.cookies?.contains { $0.name == "secure" } == true, "the Secure cookie stays in the jar")
        }
    }

    /// The field both transports send, from a jar: a `Secure` cookie over https (not http), none past
    /// its expiry, longest path first and then by name, whatever order the jar keeps them in.
    @Test func theFieldSentFollowsRFC6265InAFixedOrder() throws {
        let jar = try #require(URLSessionConfiguration.ephemeral.httpCookieStorage)
        let now = Date()
        func plant(_ name: String, path: String = "/", secure: Bool = false, expires: Date? = nil) throws {
            var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: "v", .path: path, .domain: "api.example.com"]
            if secure { properties[.secure] = "TRUE" }
            if let expires { properties[.expires] = expires }
            jar.setCookie(try #require(HTTPCookie(properties: properties)))
        }
        try plant("zeta")
        try plant("alpha")
        try plant("deep", path: "/v1/users")
        try plant("mid", path: "/v1")
        try plant("secure", secure: true)
        try plant("brief", expires: now.addingTimeInterval(60))
        let https = URL(string: "https://api.example.com/v1/users/7")!
        let http = URL(string: "http://api.example.com/v1/users/7")!
        #expect(TransportCookies.field(from: jar, for: https, now: now) == "deep=v; mid=v; alpha=v; brief=v; secure=v; zeta=v")
        #expect(TransportCookies.field(from: jar, for: http, now: now) == "deep=v; mid=v; alpha=v; brief=v; zeta=v", "no Secure cookie over http")
        let later = now.addingTimeInterval(61)
        #expect(TransportCookies.field(from: jar, for: http, now: later) == "deep=v; mid=v; alpha=v; zeta=v", "none past its expiry")
        #expect(TransportCookies.field(from: jar, for: URL(string: "http://api.example.com/")!, now: now) == "alpha=v; brief=v; zeta=v")
        #expect(TransportCookies.field(from: jar, for: URL(string: "http://other.example.com/")!, now: now) == nil)
    }

    @Test func aCookiesPathMatchesAsRFC6265Says() {
        #expect(TransportCookies.pathMatches("/echo", cookie: "/echo"))
        #expect(TransportCookies.pathMatches("/echo/x", cookie: "/echo"))
        #expect(TransportCookies.pathMatches("/echo/x", cookie: "/echo/"))
        #expect(TransportCookies.pathMatches("/anything", cookie: "/"))
        #expect(TransportCookies.pathMatches("/anything", cookie: ""))
        #expect(!TransportCookies.pathMatches("/echoes", cookie: "/echo"))
        #expect(!TransportCookies.pathMatches("/echo", cookie: "/echo/"))
        #expect(!TransportCookies.pathMatches("/", cookie: "/echo"))
        // The request's path as it goes on the wire: the trailing `/` kept, percent-encoded.
        #expect(TransportCookies.requestPath(of: URL(string: "http://127.0.0.1/echo/?q=1")!) == "/echo/")
        #expect(TransportCookies.requestPath(of: URL(string: "http://127.0.0.1")!) == "/")
        #expect(TransportCookies.requestPath(of: URL(string: "http://127.0.0.1/a%20b/c")!) == "/a%20b/c")
        #expect(TransportCookies.pathMatches(TransportCookies.requestPath(of: URL(string: "http://127.0.0.1/echo/")!), cookie: "/echo/"))
    }

    @Test(arguments: TransportUnderTest.network) func aRequestsOwnCookieIsSentAsItIs(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            _ = await transfer(transport, Self.request(server.url("/set-cookie")))
            #expect(await Self.cookieSent(transport, server) == "session=abc", "the jar's cookie goes on a request without one")
            #expect(await Self.cookieSent(transport, server, headers: ["Cookie": "mine=1"]) == "mine=1", "the request's own is not replaced")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRequestThatDoesntHandleCookiesNeitherStoresNorCarriesThem(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            _ = await transfer(transport, Self.request(server.url("/set-cookie?value=ignored"), handlesCookies: false))
            #expect(await Self.cookieSent(transport, server) == nil, "its Set-Cookie is not stored")
            _ = await transfer(transport, Self.request(server.url("/set-cookie")))
            #expect(await Self.cookieSent(transport, server) == "session=abc")
            #expect(await Self.cookieSent(transport, server, handlesCookies: false) == nil, "the jar's cookies don't go on it")
        }
    }
}
