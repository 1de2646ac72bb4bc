import Foundation
import LoopbackServer
import Switchboard
import SwitchboardTesting
import Testing

/// Multipart bodies, checked byte for byte by the loopback server's streaming parser (`/upload/echo`:
/// each part's name, file name, type, size and checksum).
@Suite(hangGuard, admission) struct MultipartTests {
    struct Upload: Request {
        var path = "/upload/echo"
        var method: HTTPMethod = .post
        var form: MultipartFormData
        var parameters: JSON?
        var parameterEncoding: ParameterEncoding?
        var body: RequestBody? { .multipart(form) }
    }

    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    static let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 13) })

    static func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-multipart-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    static func parts(_ response: Response<Upload>) -> [JSON] { response.json["parts"].array ?? [] }

    /// A quote followed by a combining mark (one Character with it) is escaped like any quote: it does
    /// not end the name and add a file name of its own (found by fuzzing).
    @Test(arguments: TransportUnderTest.network) func aQuoteBeforeACombiningMarkStaysInsideItsName(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            var form = MultipartFormData()
            form.append(Data("1".utf8), name: "a\"\u{301}; filename=\"evil.php", fileName: "f\"\u{6DB}.txt")
            form.append("2", name: "b\"\u{301}")
            let parts = Self.parts(try await makeClient(server, on: kind).response(for: Upload(form: form)))
            #expect(parts.map { $0["name"].string } == ["a%22\u{301}; filename=%22evil.php", "b%22\u{301}"])
            #expect(parts.first?["filename"] == "f%22\u{6DB}.txt")
            #expect(parts.last?["value"] == "2" && parts.last?["filename"].isNull == true)
        }
    }

    @Test(arguments: TransportUnderTest.network) func threeFilesAndTwoFieldsArriveByteExact(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let directory = try Self.scratch()
            defer { try? FileManager.default.removeItem(at: directory) }
            let text = Data("line one\r\n--not a boundary\r\nline three \u{1F600}\n".utf8)
            let textFile = directory.appendingPathComponent("notes.txt")
            try text.write(to: textFile)
            let streamed = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) })
            var form = MultipartFormData()
            form.append("holiday", name: "title")
            form.append("quote \" and ü", name: "note")
            form.append(Self.png, name: "photo", fileName: "beach.png")
            form.append(fileAt: textFile, name: "notes")
            form.append(streamOfLength: Int64(streamed.count), name: "blob", fileName: "blob.bin") { InputStream(data: streamed) }

            let response = try await makeClient(server, on: kind).response(for: Upload(form: form))
            let parts = Self.parts(response)
            #expect(response.json["complete"] == true)
            #expect(parts.map { $0["name"].string } == ["title", "note", "photo", "notes", "blob"])
            #expect(parts[0]["value"] == "holiday" && parts[0]["filename"].isNull && parts[0]["contentType"].isNull)
            #expect(parts[1]["value"] == "quote \" and ü")
            #expect(parts[2]["filename"] == "beach.png" && parts[2]["contentType"] == "image/png")
            #expect(parts[2]["checksum"].string == Checksum.of(Self.png))
            #expect(parts[3]["filename"] == "notes.txt" && parts[3]["contentType"] == "text/plain")
            #expect(parts[3]["checksum"].string == Checksum.of(text))
            #expect(parts[4]["filename"] == "blob.bin" && parts[4]["contentType"] == "application/octet-stream")
            #expect(parts[4]["size"] == .integer(Int64(streamed.count)))
            #expect(parts[4]["checksum"].string == Checksum.of(streamed))
        }
    }

    @Test(arguments: [HTTPMethod.post, .put, .patch])
    func worksWithEveryMethodThatHasABody(_ method: HTTPMethod) async throws {
        try await withServer { server in
            var form = MultipartFormData()
            form.append(Self.jpeg, name: "image", fileName: "a.jpg")
            let response = try await makeClient(server).response(for: Upload(method: method, form: form))
            #expect(Self.parts(response).first?["checksum"].string == Checksum.of(Self.jpeg))
            #expect(Self.parts(response).first?["contentType"] == "image/jpeg")
        }
    }

    @Test(arguments: TransportUnderTest.network) func parametersBecomeFieldsBeforeThePartsWithBracketNames(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            var form = MultipartFormData()
            form.append(Self.png, name: "image", fileName: "i.png")
            let request = Upload(form: form, parameters: ["user": ["name": "ada", "id": 7], "tags": ["a", "b"]])
            let response = try await makeClient(server, on: kind).response(for: request)
            let parts = Self.parts(response)
            #expect(parts.map { $0["name"].string ?? "" } == ["tags[]", "tags[]", "user[id]", "user[name]", "image"])
            #expect(parts.prefix(4).map { $0["value"].string ?? "" } == ["a", "b", "7", "ada"])

            // `.query` keeps them in the URL instead.
            var query = request
            query.path = "/echo"
            query.parameterEncoding = .query
            let echoed = try await makeClient(server, on: kind).response(for: query)
            #expect(echoed.json["args"]["user[name]"] == "ada", "\(echoed.json["query"])")
        }
    }

    @Test func theBoundaryIsRandomAndTheContentTypeCarriesIt() {
        let first = MultipartFormData(), second = MultipartFormData()
        #expect(first.boundary != second.boundary)
        #expect(first.boundary.count >= 40)
        #expect(first.contentType == "multipart/form-data; boundary=\(first.boundary)")
    }

    @Test(arguments: ["", String(repeating: "b", count: 71), "line\r\nbreak", "trailing ", "caf\u{E9}", "semi;colon", "quote\""])
    func aChosenBoundaryOutsideRFC2046IsRefusedWhenSent(boundary: String) async throws {
        var form = MultipartFormData(boundary: boundary)
        form.append("v", name: "a")
        let client = Dispatcher.stubbed(StubTransport { _ in .json([:]) })
        let error = await client.result(Upload(form: form)).failure
        guard case .invalidRequest(let reason) = error else {
            Issue.record("\(boundary.debugDescription): expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("boundary"), "\(reason)")
    }

    @Test(arguments: TransportUnderTest.network) func aChosenBoundaryWithSpecialCharactersIsQuotedAndRoundTrips(_ kind: TransportUnderTest) async throws {
        let boundary = "my boundary'()+_,-./:=?"
        var form = MultipartFormData(boundary: boundary)
        #expect(form.contentType == "multipart/form-data; boundary=\"\(boundary)\"")
        #expect(MultipartFormData(boundary: "plain-1.2_3+4'").contentType == "multipart/form-data; boundary=plain-1.2_3+4'")
        form.append("value", name: "field")
        form.append(Data("bytes".utf8), name: "file", fileName: "f.bin")
        try await withServer { server in
            let parts = Self.parts(try await makeClient(server, on: kind).response(for: Upload(form: form)))
            #expect(parts.map { $0["name"].string } == ["field", "file"])
        }
    }

    @Test func aPartThatContainsAChosenBoundaryIsRefused() async throws {
        let client = Dispatcher.stubbed(StubTransport { _ in .json([:]) })
        // In memory, in a name, and in a file across the edge between two reads.
        var inData = MultipartFormData(boundary: "B0undary")
        inData.append(Data("text then --B0undary-- more".utf8), name: "a")
        var inName = MultipartFormData(boundary: "B0undary")
        inName.append("v", name: "x--B0undary")
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("edge.bin")
        var bytes = Data(repeating: 0x61, count: (256 << 10) - 4)  // the encoder reads 256 KiB at a time
        bytes.append(Data("--B0undary".utf8))
        bytes.append(Data(repeating: 0x62, count: 100))
        try bytes.write(to: file)
        var inFile = MultipartFormData(boundary: "B0undary")
        inFile.append(fileAt: file, name: "f")
        for (label, form) in [("data", inData), ("name", inName), ("file", inFile)] {
            let error = await client.result(Upload(form: form)).failure
            guard case .invalidRequest(let reason) = error else {
                Issue.record("\(label): expected invalidRequest, got \(String(describing: error))")
                continue
            }
            #expect(reason.contains("boundary"), "\(label): \(reason)")
        }
        // The same file with a random boundary is sent (its bytes can't contain 128 random bits).
        var random = MultipartFormData()
        random.append(fileAt: file, name: "f")
        #expect(await client.result(Upload(form: random)).failure == nil)
    }

    @Test func mimeTypesComeFromTheNameThenTheBytes() throws {
        var form = MultipartFormData(boundary: "B")
        form.append(Data("x".utf8), name: "a", fileName: "report.PDF")
        form.append(Self.png, name: "b", fileName: "no-extension")
        form.append(Data("plain".utf8), name: "c", fileName: "mystery.xyz")
        form.append(Data("field".utf8), name: "d")
        form.append(Data("typed".utf8), name: "e", mimeType: "text/csv", headers: ["X-Part": "1"])
        #expect(form.parts.map(\.mimeType) == ["application/pdf", "image/png", "application/octet-stream", nil, "text/csv"])
        let body = String(decoding: RequestBody.multipart(form).data, as: UTF8.self)
        #expect(body.hasPrefix("--B\r\nContent-Disposition: form-data; name=\"a\"; filename=\"report.PDF\"\r\nContent-Type: application/pdf\r\n\r\nx\r\n"))
        #expect(body.contains("--B\r\nContent-Disposition: form-data; name=\"d\"\r\n\r\nfield\r\n"))
        #expect(body.contains("Content-Type: text/csv\r\n") && body.contains("X-Part: 1\r\n"))
        #expect(body.hasSuffix("\r\n--B--\r\n"))
    }

    @Test(arguments: TransportUnderTest.network) func namesWithQuotesAndLineBreaksAreEscapedNotInjected(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            var form = MultipartFormData()
            form.append("v", name: "evil\"\r\nX-Injected: 1")
            form.append(Data("f".utf8), name: "file", fileName: "a\"b.txt")
            let parts = Self.parts(try await makeClient(server, on: kind).response(for: Upload(form: form)))
            #expect(parts.map { $0["name"].string } == ["evil%22%0D%0AX-Injected: 1", "file"])
            #expect(parts[1]["filename"] == "a%22b.txt")
        }
    }

    @Test func imagesAreRecognisedByTheirLeadingBytes() {
        let samples: [(Data, ImageFormat?)] = [
            (Self.jpeg, .jpeg), (Self.png, .png), (Data("GIF89a....".utf8), .gif), (Data("GIF87a....".utf8), .gif),
            (Data("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8), .webp), (Data([0, 0, 0, 0x18]) + Data("ftypheic\u{0}\u{0}".utf8), .heic),
            (Data([0, 0, 0, 0x18]) + Data("ftypmif1".utf8), .heic), (Data([0, 0, 0, 0x18]) + Data("ftypisom".utf8), nil),
            (Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVE".utf8), nil), (Data([0xFF, 0xD8]), nil), (Data(), nil), (Data("{\"json\":1}".utf8), nil),
        ]
        for (data, expected) in samples {
            #expect(ImageFormat(detecting: data) == expected, "\(Array(data.prefix(12)))")
        }
    }

    // MARK: Bad input: each fails before anything is sent

    static func expectInvalid(_ server: LoopbackServer, _ request: some Request, mentioning text: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        let error = await makeClient(server).result(request).failure
        #expect(error?.invalidReason?.contains(text) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(server.totalRequests == 0, "nothing may be sent", sourceLocation: sourceLocation)
    }

    @Test func aFileThatIsNotAReadableRegularFileFailsBeforeSending() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            var missing = MultipartFormData()
            missing.append(fileAt: directory.appendingPathComponent("nope.jpg"), name: "f")
            await Self.expectInvalid(server, Upload(form: missing), mentioning: "no file at")
            var folder = MultipartFormData()
            folder.append(fileAt: directory, name: "f")
            await Self.expectInvalid(server, Upload(form: folder), mentioning: "not a regular file")
            var remote = MultipartFormData()
            remote.append(fileAt: URL(string: "https://example.com/a.jpg")!, name: "f")
            await Self.expectInvalid(server, Upload(form: remote), mentioning: "not a file URL")
        }
    }

    @Test func aStreamThatGivesMoreOrFewerBytesThanDeclaredFails() async throws {
        try await withServer { server in
            var short = MultipartFormData()
            short.append(streamOfLength: 100, name: "s") { InputStream(data: Data(count: 60)) }
            await Self.expectInvalid(server, Upload(form: short), mentioning: "gave 60 of the 100 bytes")
            var long = MultipartFormData()
            long.append(streamOfLength: 10, name: "s") { InputStream(data: Data(count: 60)) }
            await Self.expectInvalid(server, Upload(form: long), mentioning: "more than the 10 bytes")
            var failing = MultipartFormData()
            failing.append(streamOfLength: 10, name: "s") { throw CocoaError(.fileReadNoSuchFile) }
            await Self.expectInvalid(server, Upload(form: failing), mentioning: "could not be opened")
        }
    }

    @Test func aPartHeaderWithALineBreakOrParametersThatAreNotAnObjectFail() async throws {
        try await withServer { server in
            var header = MultipartFormData()
            header.append(Data("x".utf8), name: "a", headers: ["X-Bad": "1\r\nInjected: 2"])
            await Self.expectInvalid(server, Upload(form: header), mentioning: "CR, LF or NUL")
            var type = MultipartFormData()
            type.append(Data("x".utf8), name: "a", fileName: "a.txt", mimeType: "text/plain\r\nX: 1")
            await Self.expectInvalid(server, Upload(form: type), mentioning: "CR, LF or NUL")
            var array = MultipartFormData()
            array.append(parameters: ["not", "an", "object"])
            await Self.expectInvalid(server, Upload(form: array), mentioning: "must be a JSON object")
            await Self.expectInvalid(server, Upload(form: MultipartFormData(), parameters: ["a": 1], parameterEncoding: .json), mentioning: "with a body")
        }
    }

    // MARK: Large bodies go through a temporary file

    @Test(arguments: TransportUnderTest.network) func aBodyAboveTheThresholdIsUploadedFromATemporaryFileThatIsRemovedAfter(_ kind: TransportUnderTest) async throws {
        let directory = try Self.scratch(), temporary = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory); try? FileManager.default.removeItem(at: temporary) }
        // Made off the cooperative pool: three million bytes through instrumented code (the thread
        // sanitizer) would hold up other tests' awaits.
        let big = try await offPool { Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 9) }) }
        let file = directory.appendingPathComponent("big.bin")
        try big.write(to: file)
        try await withServer { server in
            let client = makeClient(server, on: kind) {
                $0.multipartMemoryThreshold = 64 << 10
                $0.temporaryDirectory = temporary
            }
            var form = MultipartFormData()
            form.append("big", name: "kind")
            form.append(fileAt: file, name: "file")
            let progress = Locked([TransferProgress]())
            let response: Response<Upload> = try await withCheckedThrowingContinuation { continuation in
                client.send(Upload(form: form), progress: { value in progress.withLock { $0.append(value) } }) { continuation.resume(with: $0) }
            }
            let parts = Self.parts(response)
            #expect(parts.last?["checksum"].string == Checksum.of(big))
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty, "the temporary body is removed")

            // Upload progress: monotonic, and it ends exactly at the whole body.
            let sent = progress.withLock { $0 }.map(\.bytesSent)
            #expect(sent == sent.sorted())
            let total = response.json["bytes"].int64
            #expect(sent.last == total, "\(sent.suffix(3)) of \(String(describing: total))")
            #expect(progress.withLock { $0 }.last?.expectedBytesToSend == total)

            // A failure removes it as well.
            var broken = form
            broken.append(streamOfLength: 5, name: "s") { InputStream(data: Data(count: 1)) }
            let error = await client.result(Upload(form: broken)).failure
            #expect(error?.isInvalidRequest == true)
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aFileBodyIsSentFromDiskWithItsLength(_ kind: TransportUnderTest) async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        let file = directory.appendingPathComponent("raw.bin")
        try data.write(to: file)
        struct PutFile: Request {
            let file: URL
            var method: HTTPMethod { .put }
            var path: String { "/upload/sink" }
            var body: RequestBody? { .file(file, contentType: "application/octet-stream") }
        }
        try await withServer { server in
            let response = try await makeClient(server, on: kind).response(for: PutFile(file: file))
            #expect(response.json["checksum"].string == Checksum.of(data))
            let error = await makeClient(server, on: kind).result(PutFile(file: directory.appendingPathComponent("missing"))).failure
            #expect(error?.invalidReason?.contains("no file at") == true, "\(String(describing: error))")
            #expect(server.hits("/upload/sink") == 1)
        }
    }
}

/// A server that refuses an upload while it is still being sent.
@Suite(hangGuard, admission) struct UploadRefusedTests {
    @Test(arguments: TransportUnderTest.network) func a413WhileTheBodyIsStillSendingEndsOnceWithTheStatusAndItsBody(_ kind: TransportUnderTest) async throws {
        let directory = try MultipartTests.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big.bin")
        try Data(count: 24 << 20).write(to: file)
        try await withServer { server in
            server.answerBeforeBody("/upload/refused", with: .json(["error": "too large"], status: 413))
            var form = MultipartFormData()
            form.append(fileAt: file, name: "file")
            let log = EventLog<MultipartTests.Upload>()
            let client = makeClient(server, on: kind)
            client.addObserver(log, for: MultipartTests.Upload.self, on: .immediate) { $0.record($1) }
            let started = Date()
            let error = await client.result(MultipartTests.Upload(path: "/upload/refused", form: form)).failure
            // RELIABILITY.md: `httpStatus(413)` with its body, every time, on both transports.
            #expect(error?.statusCode == 413, "\(String(describing: error))")
            #expect(error?.errorResponse?.json?["error"] == "too large", "\(String(describing: error))")
            #expect(Date().timeIntervalSince(started) < 30 * timeScale)
            #expect(await eventually { log.events.filter(\.isTerminal).count == 1 })
            #expect(server.hits("/upload/refused") == 1)
        }
    }
}
