import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// The transport contract and the transport-independent rules (redirects, challenges, size limits,
/// the head before the body, bodies from files and streams, file destinations), each tested once and
/// run against every transport the package has.
@Suite(hangGuard, admission) struct TransportConformanceTests {
    static let kinds = TransportUnderTest.allCases

    /// The `/bytes/:n` pattern: byte i is i mod 256.
    /// The byte at each position of `range` is the position modulo 256 (`range` from 0 up): built from
    /// slices of one cycle, since a byte-by-byte map takes tens of milliseconds of a debug build's CPU
    /// on a task's thread.
    static func pattern(_ range: Range<Int>) -> Data {
        precondition(range.lowerBound >= 0, "positions start at 0")
        var data = Data(capacity: range.count)
        var next = range.lowerBound
        while next < range.upperBound {
            let start = next % 256
            let count = min(256 - start, range.upperBound - next)
            data.append(cycle[start..<(start + count)])
            next += count
        }
        return data
    }

    private static let cycle = Data((0...255).map { UInt8($0) })

    static func temporaryFile(_ contents: Data? = nil) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID().uuidString)")
        if let contents { try contents.write(to: url) }
        return url
    }

    static func request(_ url: URL, method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    // MARK: Headers sent

    /// Both transports send the package's `User-Agent` when a request has none, a request's own
    /// instead (an empty one, empty), and a header with an empty value as an empty header.
    @Test(arguments: TransportUnderTest.network) func theDefaultUserAgentAndEmptyHeadersAreSentAlike(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let plain = await transfer(transport, TransportRequest(Self.request(server.url("/echo"))))
            #expect(plain.json["headers"]["User-Agent"].string == UserAgent.default)
            #expect(UserAgent.default.hasSuffix(" Switchboard/\(UserAgent.libraryVersion)"))
            let own = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), headers: ["user-agent": "Mine/2.0"])))
            #expect(own.json["headers"]["User-Agent"].string ?? own.json["headers"]["user-agent"].string == "Mine/2.0")
            let blanks = ["X-Empty": "", "X-Space": " ", "X-Tab": "\t", "X-Full": "yes"]
            let empty = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), headers: blanks)))
            for name in ["X-Empty", "X-Space", "X-Tab"] { #expect(empty.json["headers"][name].string == "", "\(name): \(empty.json["headers"])") }
            #expect(empty.json["headers"]["X-Full"].string == "yes")
            let blankAgent = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), headers: ["User-Agent": " "])))
            #expect(blankAgent.json["headers"]["User-Agent"].string == "", "a request's own User-Agent wins, even a blank one")
        }
    }

    /// One send at a time on one transport, so each may reuse the connection and (libcurl) the easy
    /// handle of the one before: nothing of one request (method, body, headers, progress callbacks)
    /// reaches the next.
    @Test(arguments: TransportUnderTest.network) func sendsInTurnCarryNothingFromOneToTheNext(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let body = TransferBody.data(Data("payload".utf8))
            func echo(_ method: String, _ headers: [String: String] = [:], body: TransferBody = .none) async -> JSON {
                let request = TransportRequest(Self.request(server.url("/echo"), method: method, headers: headers), body: body)
                return await transfer(transport, request, options: TransferOptions(timeout: 10, idleTimeout: method == "PUT" ? 5 : nil)).json
            }
            let post = await echo("POST", ["X-One": "1", "Content-Type": "text/plain"], body: body)
            #expect(post["method"] == "POST" && post["body"] == "payload")
            for (index, method) in ["GET", "DELETE", "GET", "PUT", "GET", "GET"].enumerated() {
                let sent = method == "PUT" ? await echo(method, body: body) : await echo(method)
                #expect(sent["method"].string == method, "send \(index): \(sent)")
                #expect(sent["body"] == (method == "PUT" ? "payload" : ""), "send \(index): \(sent)")
                #expect(sent["headers"]["X-One"].isNull && sent["headers"]["Content-Type"].isNull, "send \(index): \(sent["headers"])")
                if method == "GET" {
                    #expect(sent["headers"]["Content-Length"].isNull && sent["headers"]["Transfer-Encoding"].isNull, "send \(index): \(sent["headers"])")
                }
            }
            let head = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), method: "HEAD")))
            #expect(head.response?.httpResponse.statusCode == 200 && head.response?.data.isEmpty == true)
            let after = await echo("GET")
            #expect(after["method"] == "GET" && after["body"] == "", "a GET after a HEAD has its body read: \(after)")
        }
    }

    @Test func theUserAgentIsMadeOfTokens() {
        #expect(UserAgent.make(appName: "Reader", appVersion: "2.1") == "Reader/2.1 Switchboard/\(UserAgent.libraryVersion)")
        #expect(UserAgent.make(appName: nil, appVersion: nil) == "unknown/unknown Switchboard/\(UserAgent.libraryVersion)")
        #expect(UserAgent.make(appName: "My App (beta)", appVersion: "") == "My-App--beta-/unknown Switchboard/\(UserAgent.libraryVersion)")
        #expect(UserAgent.make(appName: "Café\r\nX: y", appVersion: "1/2") == "Caf---X--y/1-2 Switchboard/\(UserAgent.libraryVersion)")
    }

    // MARK: Redirects

    @Test(arguments: kinds) func aRedirectRewritesTheMethodAndBodyAsTheRulesSay(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let body = TransferBody.data(Data("payload".utf8))
            let post = Self.request(server.url("/redirect/302?to=/echo"), method: "POST", headers: ["Content-Type": "text/plain"])
            let found = await transfer(transport, TransportRequest(post, body: body))
            #expect(found.json["method"] == "GET" && found.json["body"] == "", "302 turns a POST into a GET without its body")
            #expect(found.json["headers"]["Content-Type"].isNull)

            let put = Self.request(server.url("/redirect/303?to=/echo"), method: "PUT")
            let seeOther = await transfer(transport, TransportRequest(put, body: body))
            #expect(seeOther.json["method"] == "GET" && seeOther.json["body"] == "")

            for code in [307, 308] {
                let kept = await transfer(transport, TransportRequest(Self.request(server.url("/redirect/\(code)?to=/echo"), method: "POST"), body: body))
                #expect(kept.json["method"] == "POST" && kept.json["body"] == "payload", "\(code) keeps the method and the body: \(kept.json)")
            }
        }
    }

    @Test(arguments: kinds) func aRedirectResendsAFileOrStreamBody(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let contents = Self.pattern(0..<70_000)
            let file = try Self.temporaryFile(contents)
            defer { try? FileManager.default.removeItem(at: file) }
            let bodies: [TransferBody] = [
                .file(file),
                .stream(length: Int64(contents.count)) { InputStream(data: contents) },
            ]
            for body in bodies {
                let record = await transfer(transport, TransportRequest(Self.request(server.url("/redirect/307?to=/echo"), method: "PUT"), body: body))
                #expect(record.json["method"] == "PUT")
                #expect(Data(base64Encoded: record.json["bodyBase64"].string ?? "") == contents, "\(body) arrives whole after the redirect")
            }
        }
    }

    @Test(arguments: kinds) func credentialsAreDroppedAtACrossOriginHopOnly(_ kind: TransportUnderTest) async throws {
        try await withServer { first in
            try await withServer { second in
                let transport = kind.make([first, second])
                let secrets = ["Authorization": "Bearer secret", "Cookie": "session=1", "X-Other": "kept"]
                let same = await transfer(transport, TransportRequest(Self.request(first.url("/redirect/302?to=/echo"), headers: secrets)))
                #expect(same.json["headers"]["Authorization"] == "Bearer secret", "same origin: kept")
                #expect(same.json["headers"]["Cookie"] == "session=1" && same.json["headers"]["X-Other"] == "kept")
                let target = second.url("/echo").absoluteString
                let cross = await transfer(transport, TransportRequest(Self.request(first.url("/redirect/302?to=\(target)"), headers: secrets)))
                #expect(cross.response?.httpResponse.url?.port == Int(second.port))
                #expect(cross.json["headers"]["Authorization"].isNull && cross.json["headers"]["Cookie"].isNull)
                #expect(cross.json["headers"]["X-Other"] == "kept")
            }
        }
    }

    @Test(arguments: kinds) func redirectCountAndSchemesAreLimited(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let two = TransferOptions(timeout: 10, redirects: RedirectRules(maximumCount: 2))
            let within = await transfer(transport, TransportRequest(Self.request(server.url("/redirect-chain/1"))), options: two)
            #expect(within.response?.httpResponse.statusCode == 200)
            let over = await transfer(transport, TransportRequest(Self.request(server.url("/redirect-chain/2"))), options: two)
            #expect(over.error.flatMap(\.urlErrorCode) == .httpTooManyRedirects, "\(String(describing: over.error))")

            let none = TransferOptions(timeout: 10, redirects: .none)
            let answer = await transfer(transport, TransportRequest(Self.request(server.url("/redirect/302"))), options: none)
            #expect(answer.response?.httpResponse.statusCode == 302, "with no redirects followed the 3xx is the answer")

            for target in ["ftp://127.0.0.1/x", "file:///etc/passwd", "data:text/plain,hi"] {
                let refused = await transfer(transport, TransportRequest(Self.request(server.url("/redirect/302?to=\(target)"))))
                #expect(refused.error.flatMap(\.urlErrorCode) == .unsupportedURL, "\(target): \(String(describing: refused.error))")
            }
            let httpsOnly = TransferOptions(timeout: 10, redirects: RedirectRules(allowedSchemes: ["https"]))
            let downgrade = await transfer(transport, TransportRequest(Self.request(server.url("/redirect/302"))), options: httpsOnly)
            #expect(downgrade.error.flatMap(\.urlErrorCode) == .unsupportedURL)
        }
    }

    // MARK: Challenges

    @Test(arguments: kinds) func aBasicChallengeIsAnsweredOnceWithTheCredentials(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let url = server.url("/basic-auth/ada/pw")
            let right = await transfer(transport, TransportRequest(Self.request(url)), options: TransferOptions(timeout: 10, credentials: Credentials(user: "ada", password: "pw")))
            #expect(right.json["authenticated"] == true)
            #expect(right.heads.count == 1 && right.heads.first?.statusCode == 200, "the challenge's 401 is not the final head")
            let wrong = await transfer(transport, TransportRequest(Self.request(url)), options: TransferOptions(timeout: 10, credentials: Credentials(user: "ada", password: "no")))
            #expect(wrong.error.map(\.isUnauthorized) == true, "\(String(describing: wrong.error))")
            let without = await transfer(transport, TransportRequest(Self.request(url)))
            #expect(without.error.map(\.isUnauthorized) == true, "\(String(describing: without.error))")
            // A 401 without a challenge is an answer like any other.
            let plain = await transfer(
                transport, TransportRequest(Self.request(server.url("/unauthorized-no-challenge"))),
                options: TransferOptions(timeout: 10, credentials: Credentials(user: "a", password: "b")))
            #expect(plain.response?.httpResponse.statusCode == 401 && plain.heads.count == 1)
        }
    }

    /// A challenge and a redirect in one transfer, in either order: each hop goes where the redirect
    /// said, the credentials answer the hop that asked, and go on with the hops after it (same origin). (FoundationNetworking, once a task has
    /// answered a challenge, sends every later hop of it as its first request with the credentials.)
    @Test(arguments: TransportUnderTest.network) func aChallengeAndARedirectInOneTransferEachReachTheRightHop(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let options = TransferOptions(timeout: 10, credentials: Credentials(user: "ada", password: "pw"), idleTimeout: 10)
            // The challenge first: 401, then the authorized request's 302, then where it points.
            let challengedFirst = await transfer(transport, TransportRequest(Self.request(server.url("/basic-auth/ada/pw?then=/echo"))), options: options)
            #expect(challengedFirst.json["path"].string == "/echo", "\(kind): \(String(describing: challengedFirst.result))")
            #expect(challengedFirst.heads.map(\.statusCode) == [200])
            #expect(server.totalRequests == 3)
            // The credentials go on to the same origin with the hops after the answer, on both transports.
            let basic = "Basic " + Data("ada:pw".utf8).base64EncodedString()
            #expect(challengedFirst.json["headers"]["Authorization"].string == basic, "\(kind): \(challengedFirst.json["headers"])")
            // The redirect first: 302, then the 401 of the hop it points to, answered there.
            let redirectedFirst = await transfer(
                transport, TransportRequest(Self.request(server.url("/redirect/302?to=/basic-auth/ada/pw"))), options: options)
            #expect(redirectedFirst.json["authenticated"] == true, "\(kind): \(String(describing: redirectedFirst.result))")
            #expect(redirectedFirst.heads.map(\.statusCode) == [200])
            #expect(server.totalRequests == 6)
        }
    }

    // MARK: Size and completeness

    @Test(arguments: kinds) func theSizeLimitBoundsMemoryButNotAFile(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route("GET", "/chunked") { _ in ServerResponse(status: 200, body: .chunks(Array(repeating: Data(count: 1000), count: 5), interval: 0)) }
            let transport = kind.make([server])
            let small = TransferOptions(timeout: 10, maximumResponseSize: 1000)
            let byLength = await transfer(transport, TransportRequest(Self.request(server.url("/bytes/5000"))), options: small)
            #expect(byLength.error?.description == NetworkError.responseTooLarge(limit: 1000).description)
            let byChunks = await transfer(transport, TransportRequest(Self.request(server.url("/chunked"))), options: small)
            #expect(byChunks.error?.description == NetworkError.responseTooLarge(limit: 1000).description)
            let file = try Self.temporaryFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let toFile = await transfer(transport, TransportRequest(Self.request(server.url("/bytes/5000")), destination: .file(file)), options: small)
            #expect(toFile.response?.bodyLength == 5000 && toFile.response?.fileURL == file)
            #expect(try Data(contentsOf: file) == Self.pattern(0..<5000))
        }
    }

    @Test(arguments: kinds) func aBodyCutShortFails(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let record = await transfer(kind.make([server]), TransportRequest(Self.request(server.url("/abort"))))
            #expect(record.error.flatMap(\.urlErrorCode) == .networkConnectionLost, "\(String(describing: record.error))")
            #expect(record.completions == 1)
        }
    }

    // MARK: The head before the body

    @Test(arguments: kinds) func theFinalHeadComesOnceBeforeItsBodyAndItsDecisionHolds(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let seen = await transfer(transport, TransportRequest(Self.request(server.url("/redirect/302?to=/bytes/3000"))))
            #expect(seen.heads.map(\.statusCode) == [200], "one head, the final one")
            #expect(!seen.bodyBeforeHead && seen.response?.data == Self.pattern(0..<3000))
            let refusal = NetworkError.invalidRequest(reason: "not this one")
            let refused = await transfer(transport, TransportRequest(Self.request(server.url("/bytes/3000"))), head: { _ in .fail(refusal) })
            #expect(refused.error?.description == refusal.description && refused.completions == 1 && refused.late == 0)
            // A refused head reads no body (LinuxNotes): of 16 MiB on offer, no byte is reported read.
            server.serve(LargeResource(length: 16 << 20), at: "/big")
            let big = await transfer(transport, TransportRequest(Self.request(server.url("/big"))), head: { _ in .fail(refusal) })
            #expect(big.error?.description == refusal.description && big.completions == 1)
            #expect(big.progress.allSatisfy { $0.bytesReceived == 0 }, "\(big.progress.map(\.bytesReceived).max() ?? 0) bytes read after the refusal")
            #expect(big.response == nil)
        }
    }

    // MARK: Files

    @Test(arguments: kinds) func aFileDestinationIsWrittenFromItsOffsetOrFromTheStart(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            // A server that honours `Range: bytes=N-` with a 206, and one that ignores it.
            server.route("GET", "/ranged") { request in
                let start = Int(request.header("Range")?.dropFirst("bytes=".count).dropLast() ?? "") ?? 0
                return ServerResponse(status: start > 0 ? 206 : 200, headers: [("Content-Range", "bytes \(start)-2999/3000")], body: .data(Self.pattern(start..<3000)))
            }
            server.route("GET", "/unranged") { _ in ServerResponse(status: 200, body: .data(Self.pattern(0..<3000))) }
            let transport = kind.make([server])
            let file = try Self.temporaryFile(Self.pattern(0..<1000) + Data("stale tail".utf8))
            defer { try? FileManager.default.removeItem(at: file) }
            let resumed = await transfer(
                transport, TransportRequest(Self.request(server.url("/ranged"), headers: ["Range": "bytes=1000-"]), destination: .file(file, offset: 1000)))
            #expect(resumed.heads.first?.statusCode == 206 && resumed.response?.bodyLength == 2000)
            #expect(try Data(contentsOf: file) == Self.pattern(0..<3000), "appended at the offset, the stale tail cut")

            try (Self.pattern(0..<1000)).write(to: file)
            let restarted = await transfer(
                transport,
                TransportRequest(Self.request(server.url("/unranged"), headers: ["Range": "bytes=1000-"]), destination: .file(file, offset: 1000)),
                head: { $0.statusCode == 206 ? .proceed : .writeFromStart }
            )
            #expect(restarted.response?.bodyLength == 3000)
            #expect(try Data(contentsOf: file) == Self.pattern(0..<3000), "a 200 to a range request rewrites the file")

            let past = await transfer(transport, TransportRequest(Self.request(server.url("/unranged")), destination: .file(file, offset: 1_000_000)))
            if case .invalidRequest = past.error {} else { Issue.record("an offset past the end: \(String(describing: past.error))") }
            let nowhere = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/file")
            let unwritable = await transfer(transport, TransportRequest(Self.request(server.url("/unranged")), destination: .file(nowhere)))
            // A folder that doesn't exist: the file can't be created (DestinationFile), on every transport.
            #expect(unwritable.error?.urlErrorCode == .cannotCreateFile, "\(String(describing: unwritable.error))")
            #expect(unwritable.completions == 1)
        }
    }

    @Test(arguments: kinds) func fileAndStreamBodiesArriveWholeWithUploadProgress(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let transport = kind.make([server])
            let contents = Self.pattern(0..<300_000)
            let file = try Self.temporaryFile(contents)
            defer { try? FileManager.default.removeItem(at: file) }
            let bodies: [TransferBody] = [.data(contents), .file(file), .stream(length: Int64(contents.count)) { InputStream(data: contents) }]
            for body in bodies {
                let record = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), method: "POST", headers: ["Content-Length": "5"]), body: body))
                #expect(Data(base64Encoded: record.json["bodyBase64"].string ?? "") == contents, "\(body)")
                #expect(record.progress.map(\.bytesSent).max() == Int64(contents.count), "\(body): upload progress reaches the length")
            }
            let missing = await transfer(
                transport, TransportRequest(Self.request(server.url("/echo"), method: "POST"), body: .file(URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)"))))
            if case .invalidRequest = missing.error {} else { Issue.record("a missing file: \(String(describing: missing.error))") }
            struct Unopenable: Error {}
            let broken = await transfer(transport, TransportRequest(Self.request(server.url("/echo"), method: "POST"), body: .stream(length: 10) { throw Unopenable() }))
            if case .invalidRequest = broken.error {} else { Issue.record("a stream that can't open: \(String(describing: broken.error))") }
        }
    }

    // MARK: The contract

    @Test(arguments: kinds) func aCancelEndsTheTransferOnceWithCancelled(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route("GET", "/slow") { _ in ServerResponse(status: 200, body: .chunks(Array(repeating: Data(count: 10), count: 20), interval: 1)) }
            // On a network transport, cancelled from the callback that reports the body's first bytes:
            // during the body. (The stub answers whole, at its answer's delay: cancelled before it.)
            let network = kind != .stub
            let record = await transfer(
                kind.make([server]), TransportRequest(Self.request(server.url("/slow"))), cancelAfter: network ? nil : 0.2, cancelAtFirstByte: network, timeout: 30)
            #expect(record.error?.isCancelled == true && record.completions == 1 && record.late == 0)
            if network {
                #expect(record.heads.count == 1)
                #expect(record.progress.contains { $0.bytesReceived > 0 })
                #expect((record.progress.last?.bytesReceived ?? 0) < 200, "not the whole body")
            }
            // The body drips for 20 s: the cancel, not the body's end, ended it.
            if let cancelled = record.cancelledAt, let completed = record.completedAt {
                #expect(completed.timeIntervalSince(cancelled) < 10 * timeScale)
            } else {
                Issue.record("no cancel or no completion: \(record)")
            }
        }
    }
}

extension NetworkError {
    /// The URL error code of a transport failure.
    var urlErrorCode: URLError.Code? {
        if case .transport(let error) = self { return error.code }
        return nil
    }

    var isCancelled: Bool {
        if case .cancelled = self { return true }
        return false
    }

    var isUnauthorized: Bool {
        if case .unauthorized = self { return true }
        return false
    }
}

/// Uploads and downloads through a ``Dispatcher`` on each transport: a multipart body assembled in a
/// temporary file, and a download cut off, then resumed with `Range`/`If-Range`, with its progress.
@Suite(hangGuard, admission) struct TransferConformanceTests {
    struct Upload: Request {
        let form: MultipartFormData
        var method: HTTPMethod { .post }
        var path: String { "/upload/echo" }
        var body: RequestBody? { .multipart(form) }
    }

    static func client(_ kind: TransportUnderTest, _ server: LoopbackServer, folder: URL) -> Dispatcher {
        let transport = kind.make([server])
        return makeClient(server) {
            $0.transport = .using(transport)
            $0.partialDownloadsDirectory = folder.appendingPathComponent("partials")
            $0.temporaryDirectory = folder
            $0.multipartMemoryThreshold = 16 << 10
        }
    }

    @Test(arguments: TransportUnderTest.allCases) func aMultipartBodyFromATemporaryFileArrivesWhole(_ kind: TransportUnderTest) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transfer-conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withServer { server in
            let data = TransportConformanceTests.pattern(0..<300_000)
            var form = MultipartFormData()
            form.append("1", name: "n")
            form.append(data, name: "file", fileName: "f.bin")
            let sent = Locked([TransferProgress]())
            let response: Response<Upload> = try await Self.client(kind, server, folder: folder).response(for: Upload(form: form)) { value in
                sent.withLock { $0.append(value) }
            }
            #expect(response.json["parts"][1]["checksum"].string == Checksum.of(data))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("switchboard-multipart") }.isEmpty)
            let last = sent.withLock { $0.last }
            #expect(last?.bytesSent == last?.expectedBytesToSend && (last?.bytesSent ?? 0) > 300_000, "\(String(describing: last))")
        }
    }

    @Test(arguments: TransportUnderTest.allCases) func aDownloadCutOffResumesWithARangeToTheSameBytes(_ kind: TransportUnderTest) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transfer-conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withServer { server in
            let file = LargeResource(length: 1_000_000)
            server.serve(file, at: "/files/f.bin")
            let client = Self.client(kind, server, folder: folder)
            let destination = folder.appendingPathComponent("f.bin")
            file.abort(atOffset: 400_000)
            let first = await client.result(Download("/files/f.bin", to: destination)).failure
            // The server closes after 400,000 of 1,000,000 bytes: a lost connection, not a short success.
            #expect(first?.urlErrorCode == .networkConnectionLost, "\(String(describing: first))")
            let received = Locked([Int64]())
            let response = try await client.response(for: Download("/files/f.bin", to: destination)) { value in
                received.withLock { $0.append(value.bytesReceived) }
            }
            #expect(response.statusCode == 206)
            #expect(file.requests.last?.range == "bytes=400000-" && file.requests.last?.ifRange == file.etag)
            #expect(Checksum.of(try Data(contentsOf: destination)) == file.checksum())
            let values = received.withLock { $0 }
            #expect(values == values.sorted() && values.last == 1_000_000, "\(values.suffix(3))")
            #expect(values.first.map { $0 >= 400_000 } == true, "progress counts the whole file, from what was there")
        }
    }
}
