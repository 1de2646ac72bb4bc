import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// What goes on the wire for a body, or its absence, is the same on every transport (issue 27's
/// review): the made-up `Content-Type`, a GET or HEAD with a body, hand-set framing headers, trailers
/// after a redirect's head, the default `User-Agent`'s app name.
@Suite(hangGuard, admission) struct RequestFramingParityTests {
    static func request(_ url: URL, method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
        TransportConformanceTests.request(url, method: method, headers: headers)
    }

    /// URLSession (on every platform) calls a POST's body without a type a form; libcurl's POST
    /// machinery does too, and would say so of a PUT's as well. Both transports: a POST's non-empty
    /// body is `application/x-www-form-urlencoded`, any other none.
    @Test(arguments: TransportUnderTest.network) func onlyAPOSTsBodyWithoutATypeIsCalledAForm(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let body = TransferBody.data(Data("a=1".utf8))
            for (method, body, expected) in [("POST", body, "application/x-www-form-urlencoded"), ("PUT", body, nil), ("PATCH", body, nil), ("POST", TransferBody.none, nil)] {
                let record = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), method: method), body: body))
                #expect(record.json["method"].string == method)
                #expect(record.json["headers"]["Content-Type"].string == expected, "\(kind) \(method): \(record.json["headers"])")
            }
            // A type of the request's own is sent as it is.
            let typed = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), method: "PUT", headers: ["Content-Type": "text/plain"]), body: body))
            #expect(typed.json["headers"]["Content-Type"].string == "text/plain")
        }
    }

    @Test(arguments: TransportUnderTest.network) func aGETOrHEADWithABodyIsRefusedBeforeAnythingIsSent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            for method in ["GET", "HEAD", "get"] {
                let record = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), method: method), body: .data(Data("x".utf8))))
                guard case .failure(.invalidRequest(let reason))? = record.result else {
                    Issue.record("\(kind) \(method) with a body: \(String(describing: record.result))")
                    continue
                }
                #expect(reason.contains("body"))
            }
            #expect(server.totalRequests == 0)
        }
    }

    /// A hand-set `Content-Length` or `Transfer-Encoding` is the transport's to write: without a body
    /// the server would wait for one that never comes (URLSession sent them; libcurl didn't).
    @Test(arguments: TransportUnderTest.network) func handSetFramingHeadersAreLeftToTheTransport(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            for headers in [["Content-Length": "5"], ["Transfer-Encoding": "chunked"]] {
                let record = await transfer(
                    transport, TransportRequest(Self.request(server.url("/echo"), headers: headers)), options: TransferOptions(timeout: 30, idleTimeout: 20))
                #expect(record.json["method"].string == "GET", "\(kind) \(headers): \(String(describing: record.result))")
                #expect(record.json["headers"]["Content-Length"] == nil && record.json["headers"]["Transfer-Encoding"] == nil, "\(record.json["headers"])")
            }
            // Two of one name in two cases (only a whole-table assignment makes them): neither goes.
            var twice = URLRequest(url: server.url("/echo"))
            twice.allHTTPHeaderFields = ["content-length": "5", "CONTENT-LENGTH": "7", "transfer-encoding": "chunked", "Transfer-ENCODING": "chunked"]
            let record = await transfer(transport, TransportRequest(twice), options: TransferOptions(timeout: 30, idleTimeout: 20))
            #expect(record.json["method"].string == "GET", "\(kind): \(String(describing: record.result))")
            let sent = record.json["headers"].object?.keys.map { $0.lowercased() } ?? []
            #expect(!sent.contains("content-length") && !sent.contains("transfer-encoding"), "\(kind): \(sent)")
            // With a body, the transport's own length, not the hand-set one.
            let body = await transfer(
                transport, TransportRequest(Self.request(server.url("/echo"), method: "POST", headers: ["Content-Length": "1"]), body: .data(Data("abcdef".utf8))))
            #expect(body.json["body"].string == "abcdef")
            #expect(body.json["headers"]["Content-Length"].string == "6")
        }
    }

    /// Every hop of a redirect goes out as the first does: a blank field (the User-Agent included)
    /// sent empty, a hand-set framing field left to the transport, the package's User-Agent when the
    /// request has none. (On URLSession the redirect rules make the next hop from the request as the
    /// app gave it: the first hop's rewrite didn't reach the next hops.)
    @Test(arguments: TransportUnderTest.network) func aRedirectsHopsGoOutAsTheFirstDoes(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let options = TransferOptions(timeout: 30, idleTimeout: 20)
            let headers = ["User-Agent": "  ", "X-Tab": "\t", "Content-Length": "5", "X-Full": "yes"]
            let blank = await transfer(transport, TransportRequest(Self.request(server.url("/redirect-chain/2"), headers: headers)), options: options)
            #expect(blank.json["path"].string == "/echo", "\(kind): \(String(describing: blank.result))")
            #expect(server.totalRequests == 4)
            #expect(blank.json["headers"]["User-Agent"].string == "", "\(kind): \(blank.json["headers"])")
            #expect(blank.json["headers"]["X-Tab"].string == "")
            #expect(blank.json["headers"]["X-Full"].string == "yes")
            #expect(blank.json["headers"]["Content-Length"] == nil)
            let plain = await transfer(transport, TransportRequest(Self.request(server.url("/redirect-chain/1"))), options: options)
            #expect(plain.json["headers"]["User-Agent"].string == UserAgent.default, "\(kind): \(plain.json["headers"])")
        }
    }

    /// A final response's trailer fields are not header lines: one that starts like a status line
    /// changes nothing, nor one whose name is not a token. (FoundationNetworking stops the process on any trailer field: see
    /// ChildProcessFaultTests.)
    @Test(TransportUnderTest.curlOnly) func aResponsesTrailersAreNotReadAsItsHead() async throws {
        let kind = TransportUnderTest.curl
        try await withServer { server in
            server.route("GET", "/chunked-trailer") { _ in
                ServerResponse(
                    status: 200,
                    body: .raw(Data("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nBad Name: 1\r\n\r\n".utf8)))
            }
            let trailed = await transfer(kind.make([server]), TransportRequest(Self.request(server.url("/chunked-trailer"))))
            let data = try #require(try? trailed.result?.get(), "\(kind): \(String(describing: trailed.result))").data
            #expect(data == Data("{}".utf8))
        }
    }

    /// A chunked redirect's trailer fields are not header lines either (before, libcurl read them into
    /// the redirect's head).
    @Test(TransportUnderTest.curlOnly) func aRedirectsTrailersAreNotReadAsItsHead() async throws {
        try await withServer { server in
            server.route("GET", "/chunked-redirect") { _ in
                ServerResponse(
                    status: 302,
                    body: .raw(Data("HTTP/1.1 302 Found\r\nLocation: /echo\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nBad Name: 1\r\n\r\n".utf8)))
            }
            let redirected = await transfer(TransportUnderTest.curl.make([server]), TransportRequest(Self.request(server.url("/chunked-redirect"))))
            #expect(redirected.json["path"].string == "/echo", "\(String(describing: redirected.result))")
        }
    }

    /// An upload the server reads slowly is not idle while its bytes go out: the idle timeout counts
    /// bytes sent as activity, not only bytes received (16 MiB read 64 KiB at a time with a 25 ms
    /// pause: about 6.4 s in all, with no byte received, against an idle timeout of 3 s — twice the
    /// 1.5 s it was, so that a loaded machine's pause between two reads of the server's can't pass for
    /// idleness).
    @Test(arguments: TransportUnderTest.network) func anUploadUnderWayIsNotIdle(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.readBodiesSlowly(at: "/upload/sink", pausePerPiece: 0.025)
            let body = Data(repeating: 0x61, count: 16 << 20)
            let started = Date()
            let record = await transfer(
                kind.make([server]), TransportRequest(Self.request(server.url("/upload/sink"), method: "POST"), body: .data(body)),
                options: TransferOptions(timeout: 60, idleTimeout: 3))
            #expect(record.json["bytes"].int == body.count, "\(kind): \(String(describing: record.result))")
            // The slow read took longer than the idle timeout: otherwise nothing was shown.
            #expect(Date().timeIntervalSince(started) > 3, "the upload was not slow enough to test anything")
        }
    }

    /// The default `User-Agent` names this process (no bundle here): the executable's name as a token.
    @Test(arguments: TransportUnderTest.network) func theDefaultUserAgentNamesTheApp(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let record = await transfer(kind.make([server]), TransportRequest(Self.request(server.url("/echo"))))
            let agent = try #require(record.json["headers"]["User-Agent"].string)
            let name = ProcessInfo.processInfo.processName
            let expected = String(name.map { $0.isLetter || $0.isNumber || "!#$%&'*+-.^_`|~".contains($0) ? $0 : "-" })
            #expect(agent.hasPrefix("\(expected)/"), "\(agent) should start with \(expected)/")
            #expect(agent.hasSuffix(" Switchboard/\(UserAgent.libraryVersion)"))
        }
    }
}
