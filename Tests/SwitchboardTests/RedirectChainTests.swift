import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// What one hop of a redirect chain looked like at the server.
struct Hop: Sendable, Equatable, CustomStringConvertible {
    var host: String
    var method: String
    var body: String
    var contentType: String?
    var authorization: String?
    var cookie: String?
    var description: String { "\(method)@\(host) body=\(body.debugDescription) ct=\(contentType ?? "-") auth=\(authorization ?? "-") cookie=\(cookie ?? "-")" }
}

/// Redirect chains hop by hop, checked against RFC 9110 §15.4 and what browsers do: each hop is built
/// from the hop before it, and credentials never cross an origin.
@Suite(hangGuard, admission) struct RedirectChainTests {
    /// Installs `/chain?steps=302,307x,…&i=N`: answers step N with its status and a Location to step
    /// N+1 (`x`: on `localhost`, another origin; `o`: back on 127.0.0.1), and the last step with 200.
    /// Records every hop; `cookie` steps (`c`) also set a cookie.
    static func installChain(on server: LoopbackServer, hops: Box<[Hop]>) {
        server.route(nil, "/chain") { request in
            hops.mutate {
                $0.append(
                    Hop(
                        host: request.header("Host") ?? "?", method: request.method, body: request.bodyText ?? "",
                        contentType: request.header("Content-Type"), authorization: request.header("Authorization"),
                        cookie: request.header("Cookie")))
            }
            let steps = (request.queryItems["steps"] ?? "").split(separator: ",").map(String.init)
            let index = Int(request.queryItems["i"] ?? "0") ?? 0
            guard index < steps.count else { return .json(["done": true]) }
            let step = steps[index]
            let status = Int(step.prefix(3)) ?? 302
            let host = step.contains("x") ? "localhost" : "127.0.0.1"
            let location = "http://\(host):\(server.port)/chain?steps=\(steps.joined(separator: ","))&i=\(index + 1)"
            var headers = [("Location", location), ("Content-Type", "application/json")]
            if step.contains("c") { headers.append(("Set-Cookie", "hop\(index)=yes; Path=/")) }
            return ServerResponse(status: status, headers: headers, body: .data(Data("{}".utf8)))
        }
    }

    struct Post: Request {
        var steps: String
        var method: HTTPMethod = .post
        var path: String { "/chain?steps=\(steps)&i=0" }
        var body: RequestBody? { method == .post || method == .put ? .text("payload", contentType: "text/plain") : nil }
        var headers: HTTPHeaders { ["Authorization": "Bearer secret"] }
    }

    /// Sends a POST (body `payload`, a bearer token) down `steps` and returns the hops the server saw.
    func hops(on kind: TransportUnderTest, _ steps: String, method: HTTPMethod = .post, cookies: CookiePolicy = .inMemory) async throws -> [Hop] {
        try await withServer { server in
            let hops = Box<[Hop]>([])
            Self.installChain(on: server, hops: hops)
            let client = makeClient(server, on: kind) { $0.cookies = cookies }
            _ = try await client.response(for: Post(steps: steps, method: method))
            return hops.value
        }
    }

    @Test(arguments: TransportUnderTest.network) func post302Then307ArrivesAsAGetWithoutABody(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "302,307")
        #expect(hops.map(\.method) == ["POST", "GET", "GET"], "\(hops)")
        #expect(hops.map(\.body) == ["payload", "", ""])
        #expect(hops[1].contentType == nil && hops[2].contentType == nil, "a GET keeps no body headers: \(hops)")
    }

    @Test(arguments: TransportUnderTest.network) func post307Then302KeepsTheBodyOnceThenBecomesAGet(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "307,302")
        #expect(hops.map(\.method) == ["POST", "POST", "GET"], "\(hops)")
        #expect(hops.map(\.body) == ["payload", "payload", ""])
        #expect(hops[1].contentType == "text/plain")
    }

    @Test(arguments: TransportUnderTest.network) func post303Then307StaysAGet(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "303,307")
        #expect(hops.map(\.method) == ["POST", "GET", "GET"], "\(hops)")
        #expect(hops.map(\.body) == ["payload", "", ""])
    }

    @Test(arguments: TransportUnderTest.network) func post301BecomesAGet(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "301")
        #expect(hops.map(\.method) == ["POST", "GET"], "\(hops)")
        #expect(hops[1].body == "")
    }

    @Test(arguments: TransportUnderTest.network) func put301And302KeepTheirMethodAndBody(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "301,302", method: .put)
        #expect(hops.map(\.method) == ["PUT", "PUT", "PUT"], "\(hops)")
        #expect(hops.map(\.body) == ["payload", "payload", "payload"])
    }

    @Test(arguments: TransportUnderTest.network) func post308Then303BecomesAGetOnlyAtTheSeeOther(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "308,303")
        #expect(hops.map(\.method) == ["POST", "POST", "GET"], "\(hops)")
        #expect(hops.map(\.body) == ["payload", "payload", ""])
    }

    @Test(arguments: TransportUnderTest.network) func credentialsAreDroppedAtTheFirstCrossOriginHopAndNeverComeBack(_ kind: TransportUnderTest) async throws {
        // 127.0.0.1 → 127.0.0.1 → localhost → 127.0.0.1 → 127.0.0.1
        let hops = try await hops(on: kind, "307,307x,307o,302")
        #expect(hops.map(\.host.first) == ["1", "1", "l", "1", "1"], "\(hops)")
        #expect(hops.map(\.authorization) == ["Bearer secret", "Bearer secret", nil, nil, nil], "\(hops)")
        #expect(hops.map(\.method) == ["POST", "POST", "POST", "POST", "GET"])
        #expect(hops.map(\.body) == ["payload", "payload", "payload", "payload", ""])
    }

    @Test(arguments: TransportUnderTest.network) func aCookieSetByARedirectIsSentOnTheNextHop(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "302c,302")
        #expect(hops[0].cookie == nil)
        #expect(hops[1].cookie == "hop0=yes", "\(hops)")
        #expect(hops[2].cookie == "hop0=yes", "\(hops)")
    }

    @Test(arguments: TransportUnderTest.network) func cookiesAreRecomputedAtEveryHopAndSentOnce(_ kind: TransportUnderTest) async throws {
        // Two hops that both set a cookie: the third hop carries both; a 307 hop (followed with a new
        // task) carries its cookie once, not twice.
        let both = try await hops(on: kind, "302c,302c")
        #expect(both[1].cookie == "hop0=yes", "\(both)")
        #expect(Set((both[2].cookie ?? "").components(separatedBy: "; ")) == ["hop0=yes", "hop1=yes"], "\(both)")
        let manual = try await hops(on: kind, "307c,302")
        #expect(manual[1].cookie == "hop0=yes", "\(manual)")
        #expect(manual[2].cookie == "hop0=yes", "\(manual)")
    }

    @Test(arguments: TransportUnderTest.network) func aCookieOfTheFirstHostIsNotSentToAnother(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "302c,302x")
        #expect(hops[1].cookie == "hop0=yes", "\(hops)")
        #expect(hops[2].host.hasPrefix("localhost"))
        #expect(hops[2].cookie == nil, "\(hops)")
    }

    @Test(arguments: TransportUnderTest.network) func withCookiesOffNoCookieIsSent(_ kind: TransportUnderTest) async throws {
        let hops = try await hops(on: kind, "302c,302", cookies: CookiePolicy.none)
        #expect(hops.count == 3, "\(hops)")
        #expect(hops.allSatisfy { $0.cookie == nil }, "\(hops)")
    }

    @Test(arguments: TransportUnderTest.network) func theRulesSayHowManyRedirectsAndToWhichSchemes(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let hops = Box<[Hop]>([])
            Self.installChain(on: server, hops: hops)
            // Not followed: the 302 is the answer, validated like any status (with its Location).
            let unfollowed = await makeClient(server, on: kind) { $0.redirects = .none }.result(Post(steps: "302", method: .get)).failure
            #expect(unfollowed?.statusCode == 302)
            #expect(unfollowed?.errorResponse?.headers["Location"]?.contains("i=1") == true)
            let accepted = try await makeClient(server, on: kind) { $0.redirects = .none }.response(
                for: Get("/chain?steps=302&i=0").with(\.validation, Validation(statusCodes: [302])))
            #expect(accepted.statusCode == 302)
            // At most two.
            let two = makeClient(server, on: kind) { $0.redirects = RedirectRules(maximumCount: 2) }
            _ = try await two.response(for: Post(steps: "302,302", method: .get))
            let tooMany = await two.result(Post(steps: "302,302,302", method: .get)).failure
            guard case .transport(let error) = tooMany, error.code == .httpTooManyRedirects else {
                Issue.record("expected httpTooManyRedirects, got \(String(describing: tooMany))")
                return
            }
            // https only: an http hop is refused.
            let httpsOnly = await makeClient(server, on: kind) { $0.redirects = RedirectRules(allowedSchemes: ["https"]) }.result(Post(steps: "302", method: .get)).failure
            guard case .transport(let refused) = httpsOnly, refused.code == .unsupportedURL else {
                Issue.record("expected unsupportedURL, got \(String(describing: httpsOnly))")
                return
            }
        }
    }

    @Test func theRedirectRuleIsAppliedToTheCurrentHop() {
        // Unit level: the rule reads the hop before it, never the original request.
        var post = URLRequest(url: URL(string: "http://a.test/1")!)
        post.httpMethod = "POST"
        post.httpBody = Data("x".utf8)
        post.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        post.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        let second = RedirectPolicy.next(after: post, status: 302, to: URL(string: "http://a.test/2")!)
        #expect(second.httpMethod == "GET" && second.httpBody == nil && second.value(forHTTPHeaderField: "Content-Type") == nil)
        let third = RedirectPolicy.next(after: second, status: 307, to: URL(string: "http://b.test/3")!)
        #expect(third.httpMethod == "GET" && third.httpBody == nil)
        #expect(third.value(forHTTPHeaderField: "Authorization") == nil)
        let back = RedirectPolicy.next(after: third, status: 307, to: URL(string: "http://a.test/4")!)
        #expect(back.value(forHTTPHeaderField: "Authorization") == nil)
        let kept = RedirectPolicy.next(after: post, status: 308, to: URL(string: "http://a.test/5")!)
        #expect(kept.httpMethod == "POST" && kept.httpBody == Data("x".utf8))
    }
}
