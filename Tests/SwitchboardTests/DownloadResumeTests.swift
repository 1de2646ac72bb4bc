import Foundation
import LoopbackServer
import Switchboard
import Testing

/// Resumes never splice two versions (issue 24, point 2; RFC 9110 §13.1.5, §14): `Accept-Encoding:
/// identity`, which validator `If-Range` carries, and the named outcome of every answer that can't be
/// appended. On both network transports.
@Suite(timeLimit(minutes: 2)) struct DownloadResumeTests {
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
            let client = DownloadTests.client(server, folders) { $0.transport = kind.factory }
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
}
