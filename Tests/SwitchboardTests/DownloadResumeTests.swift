import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// Resumes never splice two versions (issue 24, point 2; RFC 9110 §13.1.5, §14): `Accept-Encoding:
/// identity`, which validator `If-Range` carries, and the named outcome of every answer that can't be
/// appended. On both network transports.
@Suite(hangGuard, admission) struct DownloadResumeTests {
    typealias Folders = DownloadTests.Folders

    /// A 2 MiB file at `/files/big.bin` whose first download is cut off at 700,000 bytes.
    static func cutOff(_ server: LoopbackServer, _ folders: Folders, _ kind: TransportUnderTest, configure: (LargeResource) -> Void = { _ in }) async -> (
        LargeResource, Dispatcher, URL
    ) {
        await DownloadTests.cutOff(server, folders, length: 2 << 20, at: 700_000, on: kind, configure: configure)
    }

    @Test(arguments: TransportUnderTest.network)
    func everyAttemptAsksForTheFileItselfWithAcceptEncodingIdentity(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let (file, client, destination) = await Self.cutOff(server, folders, kind)
            _ = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(file.requests.map(\.range) == [nil, "bytes=700000-"])
            #expect(file.requests.map(\.acceptEncoding) == ["identity", "identity"], "what the server saw, and nothing beside it")
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aStrongETagIsPreferredOverLastModified(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let (file, client, destination) = await Self.cutOff(server, folders, kind)  // both validators
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(response.statusCode == 206)
            #expect(file.requests.last?.ifRange == file.etag)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aLastModifiedOfTheResponsesOwnSecondIsNoValidator(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let (file, client, destination) = await Self.cutOff(server, folders, kind) { file in
                file.sendValidators(etag: false, lastModified: true)
                file.lastModifiedIsNow = true
            }
            #expect(folders.partialFiles().isEmpty, "nothing kept to resume from: \(folders.partialFiles())")
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(response.statusCode == 200)
            #expect(file.requests.map(\.range) == [nil, nil])
            #expect(file.requests.map(\.ifRange) == [nil, nil])
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func anOldEnoughLastModifiedIsUsedWithoutAnETag(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let (file, client, destination) = await Self.cutOff(server, folders, kind) { $0.sendValidators(etag: false, lastModified: true) }
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(response.statusCode == 206)
            #expect(file.requests.last?.ifRange == file.lastModified)
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    static let misbehaviours: [LargeResource.PartialAnswer] = [.withoutValidators, .unknownLength, .startingElsewhere, .otherCompleteLength, .otherETag]

    @Test(arguments: TransportUnderTest.network, misbehaviours)
    func aPartialAnswerThatCantBeAppendedStartsOverFromByteZero(_ kind: TransportUnderTest, _ answer: LargeResource.PartialAnswer) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a partial file, and a server whose 206 is wrong in one way
            let (file, client, destination) = await Self.cutOff(server, folders, kind)
            file.partialAnswer = answer
            // When the download resumes
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            // Then the 206 was not appended: the partial file was discarded and the whole file asked for
            #expect(file.requests.map(\.range) == [nil, "bytes=700000-", nil])
            #expect(response.statusCode == 200)
            #expect(await DownloadTests.holds(destination, file))
            #expect(folders.partialFiles().isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aChangedFileSentAsA206WithoutValidatorsIsNeverSpliced(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a partial file of version 1, and a server that ignores If-Range and sends version
            // 2's bytes as a 206 without validators
            let (file, client, destination) = await Self.cutOff(server, folders, kind)
            file.version = 2
            file.ignoresIfRange = true
            file.partialAnswer = .withoutValidators
            // When the download resumes
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            // Then the file is version 2 whole, not version 1's start with version 2's end
            #expect(response.statusCode == 200)
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aRestartAnsweredUnusablyAgainIsATypedErrorAndNoFile(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a server that answers everything, ranges or not, with a 206 of unknown length
            let (file, client, destination) = await Self.cutOff(server, folders, kind)
            file.partialAnswer = .unknownLength
            file.rangesEverything = true
            // When the download resumes
            let error = await client.result(Download("/files/big.bin", to: destination)).failure
            // Then: one restart, then a typed error; nothing at the destination, nothing kept
            #expect(error?.downloadError == .unusableResume(reason: "a 206 of an unknown complete length (/*)"), "\(String(describing: error))")
            #expect(file.requests.map(\.range) == [nil, "bytes=700000-", nil])
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            #expect(folders.partialFiles().isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func a416ForAnotherVersionOfTheSameLengthStartsOver(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given version 1 whole in the partial file, and version 2 (same length) on a server that
            // ignores If-Range: its 416 names the length, but with version 2's ETag
            let file = LargeResource(length: 300_000)
            server.serve(file, at: "/files/f.bin")
            let client = DownloadTests.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("f.bin")
            try DownloadTests.plant(
                file.bytes(0..<file.length), for: server.url("/files/f.bin"), destination: destination, validator: file.etag, total: Int64(file.length),
                in: folders.partials)
            file.version = 2
            file.ignoresIfRange = true
            // When the download resumes
            let response = try await client.response(for: Download("/files/f.bin", to: destination))
            // Then version 1 is not completed: the 416 is followed by a clean start
            #expect(file.requests.map(\.range) == ["bytes=300000-", nil])
            #expect(response.statusCode == 200)
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func a416WithoutTheValidatorIfRangeSentStartsOver(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given version 1 whole in the partial file (its length recorded), and on the server version
            // 2 of the same length, behind a server that ignores If-Range and sends its 416 bare
            let file = LargeResource(length: 300_000)
            let ranges = Locked([String?]())
            server.route("GET", "/files/f.bin") { request in
                ranges.withLock { $0.append(request.header("Range")) }
                if request.header("Range") != nil {
                    return ServerResponse(status: 416, headers: [("Content-Range", "bytes */\(file.length)")])
                }
                return file.respond(to: request)
            }
            let client = DownloadTests.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("f.bin")
            try DownloadTests.plant(
                file.bytes(0..<file.length), for: server.url("/files/f.bin"), destination: destination, validator: file.etag, total: Int64(file.length),
                in: folders.partials)
            file.version = 2
            // When it resumes
            let response = try await client.response(for: Download("/files/f.bin", to: destination))
            // Then version 1 is not completed: the 416 is followed by a clean start, and version 2 is there
            #expect(ranges.withLock { $0 } == ["bytes=300000-", nil])
            #expect(response.statusCode == 200)
            #expect(await DownloadTests.holds(destination, file))
            #expect(folders.partialFiles().isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func a416ToTheAppsOwnRangeIsItsFailureStatus(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a download with a Range of the app's own, past the end of the file
            let file = LargeResource(length: 300_000)
            server.serve(file, at: "/files/f.bin")
            let client = DownloadTests.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("f.bin")
            let error = await client.result(Download("/files/f.bin", to: destination, headers: ["Range": "bytes=400000-"])).failure
            // Then the 416 is its answer: one request, no restart, no file, nothing kept
            #expect(error?.statusCode == 416, "\(String(describing: error))")
            #expect(file.requests.map(\.range) == ["bytes=400000-"])
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            #expect(folders.partialFiles().isEmpty)
        }
    }

    /// A network transport whose file can't be written once a head says to write from byte 0 (a full
    /// disk, say): that transfer fails right after its head, before any byte of the body.
    struct FailsToWriteFromTheStart: Transport {
        let inner: any Transport

        func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
            var failing = callbacks
            failing.head = { head in
                let decision = callbacks.head?(head) ?? .proceed
                if case .writeFromStart = decision { return .fail(.transport(URLError(.cannotWriteToFile))) }
                return decision
            }
            return inner.perform(request, options: options, callbacks: failing)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aWholeBodyToAResumeThatFailsBeforeItsFirstByteLeavesNothingToAppendTo(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given version 1 cut off at 700,000 bytes, and a transport that can't write a file from
            // byte 0 (the head of a whole body comes, then the transfer fails)
            let file = LargeResource(length: 2 << 20)
            server.serve(file, at: "/files/big.bin")
            let failing = DownloadTests.client(server, folders, on: kind) { configuration in
                configuration.transport = TransportFactory(name: "fails-to-write-from-the-start") { FailsToWriteFromTheStart(inner: kind.factory.makeTransport($0)) }
            }
            let destination = folders.files.appendingPathComponent("big.bin")
            file.abort(atOffset: 700_000)
            let cut = await failing.result(Download("/files/big.bin", to: destination)).failure
            #expect(cut?.isTransport == true, "\(String(describing: cut))")
            // When the file changed, and the resume's 200 fails right after its head
            file.version = 2
            let failed = await failing.result(Download("/files/big.bin", to: destination)).failure
            #expect(failed?.isTransport == true, "\(String(describing: failed))")
            // Then no record describes version 1's bytes as version 2's: the next send asks for
            // everything, and the file is version 2 whole
            let response = try await DownloadTests.client(server, folders, on: kind).response(for: Download("/files/big.bin", to: destination))
            #expect(file.requests.map(\.range) == [nil, "bytes=700000-", nil])
            #expect(response.statusCode == 200)
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aWholeBodyToAResumeCutOffAfterItsHeadIsNotAppendedToTheOldBytes(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given version 1 cut off at 700,000 bytes
            let (file, client, destination) = await Self.cutOff(server, folders, kind)
            // When the file changed, and the resume's 200 is cut off right after its head
            file.version = 2
            file.abort(atOffset: 0)
            let cut = await client.result(Download("/files/big.bin", to: destination)).failure
            #expect(cut?.isTransport == true, "\(String(describing: cut))")
            // Then the next send asks for everything, and the file is version 2 whole
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(file.requests.map(\.range) == [nil, "bytes=700000-", nil])
            #expect(response.statusCode == 200)
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    /// `/files/g.bin`, 100,000 bytes: the first response is cut off at 30,000, the later ones are
    /// whole; every 200 carries `headers`. Records each request's `Range`.
    static func cutThenWhole(
        _ server: LoopbackServer, _ file: LargeResource, body: @escaping @Sendable (Data) -> Data = { $0 }, headers: @escaping @Sendable () -> [(String, String)]
    ) -> Locked<[String?]> {
        let ranges = Locked([String?]())
        let whole = body(file.bytes(0..<file.length))
        server.route("GET", "/files/g.bin") { request in
            let count = ranges.withLock {
                $0.append(request.header("Range"))
                return $0.count
            }
            if count == 1 {
                return ServerResponse(status: 200, headers: headers(), body: .abort(sending: whole.prefix(whole.count * 3 / 10), declaredLength: whole.count))
            }
            return ServerResponse(status: 200, headers: headers(), body: .data(whole))
        }
        return ranges
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// Cuts `/files/g.bin` off, then sends it again: nothing may have been kept, so the second asks
    /// for everything and the file is whole.
    static func expectNothingKept(_ server: LoopbackServer, _ folders: Folders, _ kind: TransportUnderTest, _ file: LargeResource, _ ranges: Locked<[String?]>) async throws {
        let client = DownloadTests.client(server, folders, on: kind)
        let destination = folders.files.appendingPathComponent("g.bin")
        let cut = await client.result(Download("/files/g.bin", to: destination)).failure
        #expect(cut?.isTransport == true, "\(String(describing: cut))")
        #expect(folders.partialFiles().isEmpty, "\(folders.partialFiles())")
        let response = try await client.response(for: Download("/files/g.bin", to: destination))
        #expect(response.statusCode == 200)
        #expect(ranges.withLock { $0 } == [nil, nil])
        #expect(await DownloadTests.holds(destination, file))
    }

    @Test(arguments: TransportUnderTest.network)
    func aLastModifiedOnly30SecondsOlderThanDateIsNoValidator(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 100_000)
            let ranges = Self.cutThenWhole(server, file) {
                let now = Date()
                return [("Date", Self.httpDate(now)), ("Last-Modified", Self.httpDate(now.addingTimeInterval(-30)))]
            }
            try await Self.expectNothingKept(server, folders, kind, file, ranges)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aWeakETagIsNoValidator(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 100_000)
            let ranges = Self.cutThenWhole(server, file) { [("ETag", #"W/"weak""#)] }
            try await Self.expectNothingKept(server, folders, kind, file, ranges)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aContentEncodedBodyKeepsNothingToResume(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // A strong ETag, but a gzip body (sent although `identity` was asked for): its offsets
            // aren't the file's
            let file = LargeResource(length: 100_000)
            let ranges = Self.cutThenWhole(server, file, body: Gzip.stored) { [("ETag", #""strong""#), ("Content-Encoding", "gzip")] }
            try await Self.expectNothingKept(server, folders, kind, file, ranges)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func a206LongerThanItsContentRangeIsALengthMismatchAndNoFile(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a partial file of 30,000 bytes, and a 206 whose Content-Range says 30000-99999/100000
            // but whose body (its Content-Length) is 10 bytes longer
            let file = LargeResource(length: 100_000)
            let etag = #""v1""#
            let count = Locked(0)
            server.route("GET", "/files/g.bin") { _ in
                let n = count.withLock {
                    $0 += 1
                    return $0
                }
                if n == 1 {
                    return ServerResponse(status: 200, headers: [("ETag", etag)], body: .abort(sending: file.bytes(0..<30_000), declaredLength: file.length))
                }
                return ServerResponse(
                    status: 206, headers: [("ETag", etag), ("Content-Range", "bytes 30000-99999/100000")],
                    body: .data(file.bytes(30_000..<100_000) + Data(count: 10)))
            }
            let client = DownloadTests.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("g.bin")
            let cut = await client.result(Download("/files/g.bin", to: destination)).failure
            #expect(cut?.isTransport == true, "\(String(describing: cut))")
            // When it resumes
            let error = await client.result(Download("/files/g.bin", to: destination)).failure
            // Then the file is not moved into place, and nothing is kept
            #expect(error?.downloadError == .lengthMismatch(expected: 100_000, received: 100_010), "\(String(describing: error))")
            #expect(count.withLock { $0 } == 2)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            #expect(folders.partialFiles().isEmpty)
        }
    }
}
