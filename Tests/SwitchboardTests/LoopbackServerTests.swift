import Foundation
import LoopbackServer
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

// Every test starts its own server on an ephemeral port and stops it, so the tests run in parallel.
// Raw sockets are used where the exact bytes on the wire matter; URLSession elsewhere.

// Serialized: several of these tests block on raw sockets, and two at once would occupy both threads of
// the cooperative pool on a two-core machine, stalling every other suite.
@Suite("LoopbackServer", .serialized, hangGuard, admission)
struct LoopbackServerTests {
    // MARK: - Connection handling

    @Test func keepAliveServesTwoRequestsOnOneConnection() throws {
        // Given
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        // When
        try socket.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try socket.readResponse()
        try socket.send("GET /echo?n=2 HTTP/1.1\r\nHost: x\r\n\r\n")
        let second = try socket.readResponse()

        // Then
        #expect(first.status == 200)
        #expect(String(decoding: first.body, as: UTF8.self) == #"{"ok":true,"id":1,"name":"switchboard"}"#)
        #expect(second.status == 200)
        #expect(try second.json()["query"] as? String == "n=2")
        #expect(server.connectionsAccepted == 1)
        #expect(server.totalRequests == 2)
    }

    @Test func connectionCloseHeaderClosesAfterTheResponse() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = try socket.readResponse()

        #expect(response.status == 200)
        #expect(response.header("Connection") == "close")
        #expect(try socket.readToEOF().isEmpty)
    }

    @Test func http10ClientsKeepAliveOnlyWhenAsked() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("GET /small HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let kept = try socket.readResponse()
        try socket.send("GET /small HTTP/1.0\r\n\r\n")
        let closed = try socket.readResponse()

        #expect(kept.header("Connection") == "keep-alive")
        #expect(closed.header("Connection") == "close")
        #expect(try socket.readToEOF().isEmpty)
        #expect(server.connectionsAccepted == 1)
    }

    @Test func chunkedRequestBodyIsDecoded() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n")
        let response = try socket.readResponse()

        #expect(response.status == 200)
        #expect(try response.json()["body"] as? String == "hello, world")
        // The connection is still usable after a chunked body with trailers.
        try socket.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try socket.readResponse().status == 200)
    }

    @Test func expectContinueIsAnsweredBeforeTheBodyIsSent() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)
        let body = String(repeating: "z", count: 4096)

        // Given the client sends only the head and waits
        try socket.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\nExpect: 100-continue\r\n\r\n")
        let interim = try socket.readUntil("\r\n\r\n")

        // Then the server says go on, and answers once the body arrives
        #expect(String(decoding: interim, as: UTF8.self) == "HTTP/1.1 100 Continue\r\n\r\n")
        try socket.send(body)
        let response = try socket.readResponse()
        #expect(response.status == 200)
        #expect(try response.json()["body"] as? String == body)
    }

    @Test func largePostThroughURLSessionCompletes() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        var request = URLRequest(url: server.url("/echo"))
        request.httpMethod = "POST"
        request.httpBody = Data(repeating: UInt8(ascii: "q"), count: 4096)
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")

        let (data, response) = try await LoopbackTestClient.fetch(request)

        #expect(response.statusCode == 200)
        let json = try LoopbackTestClient.object(data)
        #expect((json["body"] as? String)?.count == 4096)
    }

    @Test func headRequestGetsHeadersButNoBody() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("HEAD /bytes/100 HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try socket.readUntil("\r\n\r\n")
        try socket.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        let next = try socket.readResponse()

        #expect(String(decoding: head, as: UTF8.self).contains("Content-Length: 100\r\n"))
        // The next response follows the head directly: no body bytes were sent in between.
        #expect(next.status == 200)
        #expect(next.body.count == 39)
    }

    @Test func malformedRequestGets400AndTheConnectionCloses() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("THIS IS NOT HTTP\r\n\r\n")
        let response = try socket.readResponse()

        #expect(response.status == 400)
        #expect(try socket.readToEOF().isEmpty)
    }

    @Test func contentLengthTogetherWithChunkedIsRejected() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")

        #expect(try socket.readResponse().status == 400)
    }

    @Test func unknownPathIs404JSON() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }

        let (data, response) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/no/such/thing")))

        #expect(response.statusCode == 404)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(try LoopbackTestClient.object(data)["path"] as? String == "/no/such/thing")
    }

    // MARK: - Standard routes

    @Test func echoReturnsMethodQueryHeadersAndBody() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        var request = URLRequest(url: server.url("/echo/sub/path?name=J%C3%BCrgen&tag=a+b&empty="))
        request.httpMethod = "PUT"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("yes", forHTTPHeaderField: "X-Custom-Header")
        request.httpBody = Data(#"{"n":5}"#.utf8)

        let (data, response) = try await LoopbackTestClient.fetch(request)
        let json = try LoopbackTestClient.object(data)

        #expect(response.statusCode == 200)
        #expect(json["method"] as? String == "PUT")
        #expect(json["path"] as? String == "/echo/sub/path")
        #expect(json["query"] as? String == "name=J%C3%BCrgen&tag=a+b&empty=")
        #expect(json["args"] as? [String: String] == ["name": "Jürgen", "tag": "a b", "empty": ""])
        #expect((json["headers"] as? [String: String])?["X-Custom-Header"] == "yes")
        #expect(json["body"] as? String == #"{"n":5}"#)
        #expect((json["json"] as? [String: Any])?["n"] as? Int == 5)
    }

    @Test func echoDecodesFormBodies() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)
        let body = "user=ann+lee&city=K%C3%B6ln"

        try socket.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let json = try socket.readResponse().json()

        #expect(json["form"] as? [String: String] == ["user": "ann lee", "city": "Köln"])
        #expect(json["json"] is NSNull)
    }

    @Test(arguments: [200, 201, 204, 404, 418, 500, 503])
    func statusRouteAnswersThatStatus(code: Int) async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }

        let (data, response) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/status/\(code)")))

        #expect(response.statusCode == code)
        if code == 204 {
            #expect(data.isEmpty)
        } else {
            #expect(try LoopbackTestClient.object(data)["message"] as? String == "status \(code)")
        }
    }

    @Test func basicAuthAcceptsTheRightCredentials() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        var request = URLRequest(url: server.url("/basic-auth/ann/secret"))
        request.setValue("Basic " + Data("ann:secret".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")

        let (data, response) = try await LoopbackTestClient.fetch(request)

        #expect(response.statusCode == 200)
        #expect(try LoopbackTestClient.object(data)["user"] as? String == "ann")
    }

    @Test func basicAuthChallengesWrongCredentials() throws {
        // Raw socket: URLSession on Linux never completes a 401 with a Basic challenge and no auth handler.
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)
        let wrong = Data("ann:nope".utf8).base64EncodedString()

        try socket.send("GET /basic-auth/ann/secret HTTP/1.1\r\nHost: x\r\nAuthorization: Basic \(wrong)\r\n\r\n")
        let response = try socket.readResponse()

        #expect(response.status == 401)
        #expect(response.header("WWW-Authenticate") == #"Basic realm="loopback""#)
        #expect(try response.json()["authenticated"] as? Bool == false)
    }

    @Test func abortClosesTheConnectionMidBody() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("GET /abort?declared=500&sent=40 HTTP/1.1\r\nHost: x\r\n\r\n")
        let everything = try socket.readToEOF()
        let text = String(decoding: everything, as: UTF8.self)
        let headEnd = try #require(text.range(of: "\r\n\r\n"))

        #expect(text.contains("Content-Length: 500\r\n"))
        #expect(text[headEnd.upperBound...].utf8.count == 40)
    }

    @Test func closeRouteSendsNothing() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("GET /close HTTP/1.1\r\nHost: x\r\n\r\n")

        #expect(try socket.readToEOF().isEmpty)
        #expect(server.hits("/close") == 1)
    }

    @Test func dripDeliversAChunkedBody() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("GET /drip?chunks=4&interval=20&size=5 HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try socket.readResponse()

        #expect(response.status == 200)
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(response.chunkCount == 4)
        #expect(response.body == Data(repeating: UInt8(ascii: "a"), count: 20))
    }

    @Test func dripArrivesWholeThroughURLSession() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }

        let (data, response) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/drip?chunks=3&interval=10&size=1000")))

        #expect(response.statusCode == 200)
        #expect(data.count == 3000)
    }

    @Test func bytesAndJSONRoutesAreDeterministic() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }

        let (bytes, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/bytes/300")))
        let (json, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/json/8")))

        #expect(bytes == Data((0..<300).map { UInt8(truncatingIfNeeded: $0) }))
        #expect(json.count >= 8 * 1024)
        let items = try #require(try LoopbackTestClient.object(json)["items"] as? [[String: Any]])
        #expect(items.first?["name"] as? String == "item 1")
    }

    @Test func redirectsAreFollowedToEcho() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }

        let (data, response) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/redirect-chain/2")))

        #expect(response.statusCode == 200)
        #expect(try LoopbackTestClient.object(data)["path"] as? String == "/echo")
        #expect(server.hits("/redirect-chain/2") == 1)
        #expect(server.hits("/redirect-chain/0") == 1)
    }

    @Test func flakyFailsTheFirstRequestsPerKey() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let url = server.url("/flaky/k1?failures=2&status=503&retryAfter=1")

        let (_, first) = try await LoopbackTestClient.fetch(URLRequest(url: url))
        let (_, second) = try await LoopbackTestClient.fetch(URLRequest(url: url))
        let (data, third) = try await LoopbackTestClient.fetch(URLRequest(url: url))
        let (otherData, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/flaky/k2?failures=0")))

        #expect(first.statusCode == 503)
        #expect(first.value(forHTTPHeaderField: "Retry-After") == "1")
        #expect(second.statusCode == 503)
        #expect(third.statusCode == 200)
        #expect(try LoopbackTestClient.object(data)["attempt"] as? Int == 3)
        #expect(try LoopbackTestClient.object(otherData)["attempt"] as? Int == 1)
        #expect(server.hits("/flaky/k1") == 3)
    }

    @Test func etagRevalidationAnswers304() throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let socket = try LoopbackTestSocket(port: server.port)

        try socket.send("GET /etag/a HTTP/1.1\r\nHost: x\r\n\r\n")
        let fresh = try socket.readResponse()
        try socket.send("GET /etag/a HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"v1\"\r\n\r\n")
        let revalidated = try socket.readResponse()

        #expect(fresh.status == 200)
        #expect(fresh.header("ETag") == "\"v1\"")
        #expect(revalidated.status == 304)
        #expect(revalidated.body.isEmpty)
    }

    // MARK: - Demo routes

    @Test func multipartImageUploadIsParsed() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let image = Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 2000) + [0xFF, 0xD9])
        let form = LoopbackMultipartBody()
        form.addField("caption", "a cat")
        form.addFile("image", fileName: "cat.jpg", contentType: "image/jpeg", data: image)
        var request = URLRequest(url: server.url("/iphone/image/upload"))
        request.httpMethod = "POST"
        request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = form.data

        let (data, response) = try await LoopbackTestClient.fetch(request)
        let json = try LoopbackTestClient.object(data)

        #expect(response.statusCode == 200)
        #expect(json["fileName"] as? String == "cat.jpg")
        #expect(json["size"] as? Int == image.count)
        #expect(json["contentType"] as? String == "image/jpeg")
        #expect((json["imageId"] as? String)?.count == 12)
    }

    @Test func multiImageUploadListsFilesAndFields() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let form = LoopbackMultipartBody()
        form.addField("album", "holiday")
        form.addFile("photo1", fileName: "a.png", contentType: "image/png", data: Data(repeating: 1, count: 10))
        form.addFile("photo2", fileName: "b.jpg", contentType: "image/jpeg", data: Data("line\r\n--not-a-boundary\r\n".utf8))
        var request = URLRequest(url: server.url("/upload/images"))
        request.httpMethod = "POST"
        request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = form.data

        let (data, response) = try await LoopbackTestClient.fetch(request)
        let json = try LoopbackTestClient.object(data)
        let files = try #require(json["files"] as? [[String: Any]])

        #expect(response.statusCode == 200)
        #expect(json["count"] as? Int == 2)
        #expect(json["fields"] as? [String: String] == ["album": "holiday"])
        #expect(files.map { $0["fileName"] as? String } == ["a.png", "b.jpg"])
        #expect(files.map { $0["size"] as? Int } == [10, 24])
    }

    @Test func uploadWithoutImagePartIs400() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        let form = LoopbackMultipartBody()
        form.addField("caption", "no picture")
        var request = URLRequest(url: server.url("/iphone/image/upload"))
        request.httpMethod = "POST"
        request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = form.data

        let (data, response) = try await LoopbackTestClient.fetch(request)

        #expect(response.statusCode == 400)
        #expect(try LoopbackTestClient.object(data)["error"] as? String == "no image")
    }

    /// `/me` answers the README's token sample as its API would: "stale-token" gets a 403 with
    /// `token_expired` (what the sample's `isExpired` names), another wrong token a 401, the refreshed
    /// one the user.
    @Test func theDemoMeRouteAnswersEachTokenAsTheReadmeSays() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        func me(_ token: String?) async throws -> (Int, [String: Any]) {
            var request = URLRequest(url: server.url("/me"))
            if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            let (data, response) = try await LoopbackTestClient.fetch(request)
            return (response.statusCode, try LoopbackTestClient.object(data))
        }
        let stale = try await me("stale-token")
        #expect(stale.0 == 403 && stale.1["error"] as? String == "token_expired")
        let expired = try await me("expired-token")
        #expect(expired.0 == 401)
        #expect(try await me(nil).0 == 401)
        let fresh = try await me("fresh-token")
        #expect(fresh.0 == 200 && fresh.1["name"] as? String == "Ada")
    }

    @Test func demoUserRegisterAndListRoutes() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        var register = URLRequest(url: server.url("/register"))
        register.httpMethod = "POST"
        register.setValue("application/json", forHTTPHeaderField: "Content-Type")
        register.httpBody = Data(#"{"username":"ann","password":"secret"}"#.utf8)
        var taken = register
        taken.httpBody = Data(#"{"username":"taken","password":"secret"}"#.utf8)
        var short = register
        short.httpBody = Data(#"{"username":"ann","password":"pw"}"#.utf8)

        let (user, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/users/7?version=1.2")))
        let (registered, _) = try await LoopbackTestClient.fetch(register)
        let (_, takenResponse) = try await LoopbackTestClient.fetch(taken)
        let (_, shortResponse) = try await LoopbackTestClient.fetch(short)
        let (list, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/api.php?type=hot&city=bj&start=3&end=6")))
        let (jpeg, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/images/42")))

        #expect((try LoopbackTestClient.object(user)["user"] as? [String: Any])?["name"] as? String == "User 7")
        #expect(try LoopbackTestClient.object(user)["version"] as? String == "1.2")
        #expect(try LoopbackTestClient.object(registered)["userId"] as? String == "u-ann")
        #expect(takenResponse.statusCode == 409)
        #expect(shortResponse.statusCode == 400)
        #expect((try LoopbackTestClient.object(list)["list"] as? [[String: Any]])?.map { $0["id"] as? Int } == [3, 4, 5])
        #expect(Array(jpeg.prefix(4)) == [0xFF, 0xD8, 0xFF, 0xE0])
        #expect(Array(jpeg.suffix(2)) == [0xFF, 0xD9])
    }

    // MARK: - Custom routes and lifecycle

    @Test func customRoutesCaptureParametersAndOverrideStandardOnes() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }
        server.route("GET", "/small") { _ in .text("overridden") }
        server.route("GET", "/files/:folder/*") { request in
            .json(["folder": request.pathParameters["folder"] ?? "", "rest": request.pathParameters["*"] ?? ""])
        }

        let (small, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/small")))
        let (files, _) = try await LoopbackTestClient.fetch(URLRequest(url: server.url("/files/my%20docs/a/b.txt")))

        #expect(String(decoding: small, as: UTF8.self) == "overridden")
        #expect(try LoopbackTestClient.object(files) as? [String: String] == ["folder": "my docs", "rest": "a/b.txt"])
    }

    @Test func manyServersRunInParallel() async throws {
        let servers = try (0..<8).map { _ in try LoopbackServer.standard() }
        defer { servers.forEach { $0.stop() } }

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for server in servers {
                group.addTask {
                    try await LoopbackTestClient.fetch(URLRequest(url: server.url("/small"))).1.statusCode
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(Set(servers.map(\.port)).count == 8)
        #expect(statuses == Array(repeating: 200, count: 8))
    }

    @Test func concurrentConnectionsAreServed() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stop() }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let socket = try LoopbackTestSocket(port: server.port)
                    for _ in 0..<5 {
                        try socket.send("GET /echo?i=\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                        let response = try socket.readResponse()
                        #expect(try response.json()["query"] as? String == "i=\(index)")
                    }
                }
            }
            try await group.waitForAll()
        }

        #expect(server.connectionsAccepted == 16)
        #expect(server.hits("/echo") == 80)
    }

    @Test func stopIsIdempotentClosesConnectionsAndFreesThePort() throws {
        // Given a server with an open keep-alive connection, on a port above Linux's ephemeral range
        // (32768–60999): the other suites' servers take ephemeral ports, so none can take this one
        // between the stop and the checks below.
        var started: LoopbackServer?
        for candidate in (0..<20).map({ _ in UInt16.random(in: 61_000...65_000) }) {
            if let server = try? LoopbackServer.standard(port: candidate) {
                started = server
                break
            }
        }
        let server = try #require(started, "no free port above the ephemeral range")
        let port = server.port
        let socket = try LoopbackTestSocket(port: port)
        try socket.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try socket.readResponse()

        // When it is stopped twice
        server.stop()
        server.stop()

        // Then the connection is closed, nothing listens, and the port can be bound again
        #expect(try socket.readToEOF().isEmpty)
        #expect(server.openConnections == 0)
        #expect(throws: (any Error).self) { try LoopbackTestSocket(port: port) }
        let again = LoopbackServer(port: port)
        try again.start()
        #expect(again.port == port)
        again.stop()
    }

    @Test func stopInterruptsSlowHandlers() throws {
        let server = try LoopbackServer.standard()
        let socket = try LoopbackTestSocket(port: server.port)
        try socket.send("GET /delay/60000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let deadline = Date().addingTimeInterval(30)
        while server.totalRequests == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(server.totalRequests == 1, "the slow handler is running")

        let stopping = Date()
        server.stop()

        // The handler woke at once (not after its minute), and the client reads to the close.
        #expect(Date().timeIntervalSince(stopping) < 30, "woke at the stop, not after the handler's minute")
        #expect(server.openConnections == 0)
        _ = try socket.readToEOF()
    }

    @Test func startTwiceThrows() throws {
        let server = LoopbackServer()
        try server.start()
        defer { server.stop() }
        #expect(throws: LoopbackServerError.self) { try server.start() }
        #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
    }
}

// MARK: - Helpers

/// A blocking TCP client for tests where the exact bytes matter. Reads time out after 10 s.
final class LoopbackTestSocket {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A parsed HTTP response.
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: Data
        var chunkCount = 0

        func header(_ name: String) -> String? {
            headers.last { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
        }

        func json() throws -> [String: Any] {
            try LoopbackTestClient.object(body)
        }
    }

    private let fd: Int32
    private var buffer = Data()

    init(port: UInt16) throws {
        #if canImport(Darwin)
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw Failure(description: "connect to port \(port) failed (errno \(errno))")
        }
    }

    deinit {
        close(fd)
    }

    func send(_ text: String) throws {
        try send(Data(text.utf8))
    }

    func send(_ data: Data) throws {
        #if canImport(Darwin)
        let flags: Int32 = 0
        #else
        let flags = Int32(MSG_NOSIGNAL)
        #endif
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = rawSend(fd, raw.baseAddress! + offset, raw.count - offset, flags)
                guard sent > 0 else { throw Failure(description: "send failed (errno \(errno))") }
                offset += sent
            }
        }
    }

    /// Receives more bytes into the buffer; returns false at EOF.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw Failure(description: "recv failed or timed out (errno \(errno))")
        }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Reads up to and including `marker`.
    func readUntil(_ marker: String) throws -> Data {
        let needle = Data(marker.utf8)
        while true {
            if let range = buffer.range(of: needle) {
                let result = buffer[buffer.startIndex..<range.upperBound]
                buffer = Data(buffer[range.upperBound...])
                return Data(result)
            }
            guard try fill() else { throw Failure(description: "EOF before \(marker.debugDescription)") }
        }
    }

    private func read(exactly count: Int) throws -> Data {
        while buffer.count < count {
            guard try fill() else { throw Failure(description: "EOF after \(buffer.count) of \(count) bytes") }
        }
        let result = Data(buffer.prefix(count))
        buffer = Data(buffer.dropFirst(count))
        return result
    }

    /// Reads everything until the server closes (or resets) the connection.
    func readToEOF() throws -> Data {
        while try fill() {}
        defer { buffer = Data() }
        return buffer
    }

    /// Reads one response framed by Content-Length or chunked encoding (or EOF when neither is present).
    func readResponse() throws -> Response {
        let head = String(decoding: try readUntil("\r\n\r\n"), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "bad status line") }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = Response(status: status, headers: headers, body: Data())
        if response.header("Transfer-Encoding") == "chunked" {
            while true {
                let sizeLine = String(decoding: try readUntil("\r\n"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard let size = Int(sizeLine, radix: 16) else { throw Failure(description: "bad chunk size") }
                if size == 0 {
                    _ = try readUntil("\r\n")
                    break
                }
                response.body.append(try read(exactly: size))
                response.chunkCount += 1
                _ = try read(exactly: 2)
            }
        } else if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            if status != 304 && status != 204 { response.body = try read(exactly: length) }
        } else if status != 204 && status != 304 {
            response.body = try readToEOF()
        }
        return response
    }
}

#if canImport(Darwin)
private func rawSend(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    Darwin.send(fd, pointer, count, flags)
}
#else
private func rawSend(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    Glibc.send(fd, pointer, count, flags)
}
#endif

/// URLSession helpers: one ephemeral session per request with a serial delegate queue.
enum LoopbackTestClient {
    struct NotHTTP: Error {}

    static func fetch(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 20
        let session = URLSession(configuration: configuration, delegate: nil, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let response = response as? HTTPURLResponse {
                    continuation.resume(returning: (data ?? Data(), response))
                } else {
                    continuation.resume(throwing: NotHTTP())
                }
            }.resume()
        }
    }

    static func object(_ data: Data) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw NotHTTP()
        }
        return object
    }
}

/// Builds a `multipart/form-data` body.
final class LoopbackMultipartBody {
    let boundary = "Boundary-\(UUID().uuidString)"
    private var parts = Data()

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The parts added so far plus the closing delimiter.
    var data: Data { parts + Data("--\(boundary)--\r\n".utf8) }

    func addField(_ name: String, _ value: String) {
        parts.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
    }

    func addFile(_ name: String, fileName: String, contentType: String, data file: Data) {
        parts.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(fileName)\"\r\nContent-Type: \(contentType)\r\n\r\n".utf8))
        parts.append(file)
        parts.append(Data("\r\n".utf8))
    }
}
