import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// Where a download lands (issue 24, point 1): a name from the network never leaves its folder, and
/// nothing is deleted unless the app asked. On both network transports.
@Suite(timeLimit(minutes: 2)) struct DownloadDestinationTests {
    typealias Folders = DownloadTests.Folders

    /// Names a hostile server could put in a URL's last path component (as sent, percent-encoded).
    static let hostileNames = [
        "..%2Fescaped.txt",  // `../escaped.txt`: one folder up
        "%2e%2e",  // `..`: the folder above, which the old move step removed
        "..%5C..%5Cx.txt",  // backslashes
        "%2Ebashrc",  // a leading dot
        "evil%E2%80%AEtxt.exe",  // U+202E RIGHT-TO-LEFT OVERRIDE
        "line%0Abreak.txt",  // a control character
        String(repeating: "a", count: 256),  // longer than 255 bytes
    ]

    static func client(_ server: LoopbackServer, _ folders: Folders, _ kind: TransportUnderTest) -> Dispatcher {
        DownloadTests.client(server, folders) { $0.transport = kind.factory }
    }

    static func contents(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test(arguments: TransportUnderTest.network, hostileNames)
    func aHostileNameFromTheURLIsReplacedAndNothingElseInTheFolderIsTouched(_ kind: TransportUnderTest, _ name: String) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a folder with an earlier download in it
            let file = LargeResource(length: 50_000)
            server.route("GET", "/dl/*") { file.respond(to: $0) }
            let earlier = folders.files.appendingPathComponent("earlier.bin")
            try Data("earlier".utf8).write(to: earlier)
            // When a download to the folder is named by the server
            let response = try await Self.client(server, folders, kind).response(for: Download(server.url("/dl/" + name).absoluteString, to: folders.files))
            // Then it is in the folder under a safe name, and the earlier file is as it was
            #expect(file.requests.count == 1, "the request reached the route: \(file.requests.count)")
            #expect(response.fileURL?.lastPathComponent == "download")
            #expect(response.fileURL?.deletingLastPathComponent().standardizedFileURL.path == folders.files.standardizedFileURL.path)
            #expect(try Self.contents(folders.files) == ["download", "earlier.bin"])
            #expect(try Self.contents(folders.root) == ["files", "partials"], "nothing written beside the folder")
            #expect(try Data(contentsOf: earlier) == Data("earlier".utf8))
            #expect(await DownloadTests.holds(folders.files.appendingPathComponent("download"), file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aContentDispositionNameIsUsedOnlyWhenSafe(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 20_000)
            server.serve(file, at: "/files/report.pdf")
            let client = Self.client(server, folders, kind)
            let options: DownloadDestination.Options = [.removePreviousFile]
            // A hostile name (both forms): the URL's name instead.
            file.contentDisposition = #"attachment; filename="../../x"; filename*=UTF-8''..%2F..%2Fy"#
            let hostile = try await client.response(for: Download("/files/report.pdf", to: .folder(folders.files, options: options)))
            #expect(hostile.fileURL?.lastPathComponent == "report.pdf")
            // A safe name: `filename*` before `filename`.
            file.contentDisposition = #"attachment; filename="plain.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"#
            let safe = try await client.response(for: Download("/files/report.pdf", to: .folder(folders.files, options: options)))
            #expect(safe.fileURL?.lastPathComponent == "résumé.pdf")
            #expect(try Self.contents(folders.files) == ["report.pdf", "résumé.pdf"])
            #expect(try Self.contents(folders.root) == ["files", "partials"])
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func anExistingFileIsAnErrorAndStaysUntouchedUnlessRemovePreviousFile(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a file at the destination
            let file = LargeResource(length: 1 << 20)
            server.serve(file, at: "/files/big.bin")
            let client = Self.client(server, folders, kind)
            let destination = folders.files.appendingPathComponent("big.bin")
            try Data("precious".utf8).write(to: destination)
            // When a download goes there without `.removePreviousFile`
            let error = await client.result(Download("/files/big.bin", to: destination)).failure
            // Then it fails, the file is untouched and no body byte was kept
            #expect(error?.downloadError == .destinationExists(destination.standardizedFileURL), "\(String(describing: error))")
            #expect(try Data(contentsOf: destination) == Data("precious".utf8))
            #expect(file.requests.count == 1, "the head was refused, nothing asked again")
            #expect(folders.partialFiles().isEmpty, "no body byte written: \(folders.partialFiles())")

            // With `.removePreviousFile` it is replaced.
            let response = try await client.response(for: Download("/files/big.bin", to: .file(destination, options: [.removePreviousFile])))
            #expect(response.fileURL?.standardizedFileURL == destination.standardizedFileURL)
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aSymbolicLinkAtTheDestinationIsNeverFollowed(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a link in the folder to a file outside it
            let file = LargeResource(length: 100_000)
            server.serve(file, at: "/files/report.pdf")
            let client = Self.client(server, folders, kind)
            let outside = folders.root.appendingPathComponent("outside.txt")
            try Data("outside".utf8).write(to: outside)
            let link = folders.files.appendingPathComponent("report.pdf")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: outside)
            // When a download to the folder would be named like the link: an error, nothing changed
            let error = await client.result(Download("/files/report.pdf", to: folders.files)).failure
            #expect(error?.downloadError == .destinationExists(link.standardizedFileURL), "\(String(describing: error))")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == outside.path)
            // With `.removePreviousFile` the link itself is replaced, its target never written.
            _ = try await client.response(for: Download("/files/report.pdf", to: .folder(folders.files, options: [.removePreviousFile])))
            #expect(try Data(contentsOf: outside) == Data("outside".utf8))
            let type = try FileManager.default.attributesOfItem(atPath: link.path)[.type] as? FileAttributeType
            #expect(type == .typeRegular)
            #expect(await DownloadTests.holds(link, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aFolderThatIsASymbolicLinkWorksAndTheFileLandsInTheResolvedFolder(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 30_000)
            server.serve(file, at: "/files/report.pdf")
            let linked = folders.root.appendingPathComponent("linked", isDirectory: true)
            try FileManager.default.createSymbolicLink(at: linked, withDestinationURL: folders.files)
            let response = try await Self.client(server, folders, kind).response(for: Download("/files/report.pdf", to: linked))
            let landed = try #require(response.fileURL)
            #expect(URL(fileURLWithPath: landed.path).resolvingSymlinksInPath().deletingLastPathComponent().path == folders.files.resolvingSymlinksInPath().path)
            #expect(try Self.contents(folders.files) == ["report.pdf"])
            #expect(await DownloadTests.holds(folders.files.appendingPathComponent("report.pdf"), file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aDirectoryAtTheDestinationIsNeverRemoved(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 30_000)
            server.serve(file, at: "/files/big.bin")
            let directory = folders.files.appendingPathComponent("big.bin", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data("inside".utf8).write(to: directory.appendingPathComponent("inside.txt"))
            let destination = DownloadDestination.file(URL(fileURLWithPath: directory.path, isDirectory: false), options: [.removePreviousFile])
            let error = await Self.client(server, folders, kind).result(Download("/files/big.bin", to: destination)).failure
            #expect(error?.downloadError?.reason?.contains("a directory is there") == true, "\(String(describing: error))")
            #expect(try Data(contentsOf: directory.appendingPathComponent("inside.txt")) == Data("inside".utf8))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func theDestinationClosureChoosesWhenTheHeadArrivesAndItsKeyResumes(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a closure destination that files by content type
            let file = LargeResource(length: 2 << 20)
            server.serve(file, at: "/files/big.bin")
            let client = Self.client(server, folders, kind)
            let calls = Locked([(temporary: URL, status: Int)]())
            let destination = DownloadDestination(resumeKey: "big-file") { [folders] temporary, response in
                calls.withLock { $0.append((temporary, response.statusCode)) }
                let type = response.mimeType == "application/octet-stream" ? "binary" : "other"
                return (folders.files.appendingPathComponent(type).appendingPathComponent("big.bin"), [.createIntermediateDirectories])
            }
            // When the first attempt is cut off and a second one, of the same key, follows
            file.abort(atOffset: 600_000)
            let first = await client.result(Download("/files/big.bin", to: destination)).failure
            #expect(first?.isTransport == true, "\(String(describing: first))")
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            // Then the second resumed the first's partial file, and the closure chose on each head
            #expect(response.statusCode == 206)
            #expect(file.requests.map(\.range) == [nil, "bytes=600000-"])
            #expect(response.fileURL?.path.hasSuffix("files/binary/big.bin") == true, "\(String(describing: response.fileURL))")
            let seen = calls.withLock { $0 }
            #expect(seen.map(\.status) == [200, 206])
            #expect(seen.allSatisfy { $0.temporary.deletingLastPathComponent().standardizedFileURL == folders.partials.standardizedFileURL })
            #expect(await DownloadTests.holds(folders.files.appendingPathComponent("binary/big.bin"), file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aDestinationClosureThatThrowsFailsTheDownloadWithoutAFile(_ kind: TransportUnderTest) async throws {
        struct Refused: Error {}
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 30_000)
            server.serve(file, at: "/files/big.bin")
            let destination = DownloadDestination(resumeKey: "refused") { _, _ in throw Refused() }
            let error = await Self.client(server, folders, kind).result(Download("/files/big.bin", to: destination)).failure
            #expect(error?.downloadError == .destinationThrew(reason: "Refused()"), "\(String(describing: error))")
            let listing = try Self.contents(folders.files)
            #expect(listing.isEmpty)
            #expect(folders.partialFiles().isEmpty)
        }
    }

    /// A folder on another file system than the temporary directory (`/dev/shm` on Linux), if any.
    static let otherFileSystem: URL? = {
        let shm = URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        let manager = FileManager.default
        guard let here = try? manager.attributesOfItem(atPath: manager.temporaryDirectory.path)[.systemNumber] as? NSNumber,
            let there = try? manager.attributesOfItem(atPath: shm.path)[.systemNumber] as? NSNumber, here != there, manager.isWritableFile(atPath: shm.path)
        else { return nil }
        return shm
    }()

    @Test(.enabled(if: otherFileSystem != nil, "needs a writable /dev/shm on another file system"), arguments: TransportUnderTest.network)
    func aPartialFileOnAnotherFileSystemIsCopiedIntoPlace(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        let partials = try #require(Self.otherFileSystem).appendingPathComponent("switchboard-partials-\(UUID().uuidString)", isDirectory: true)
        defer {
            folders.remove()
            try? FileManager.default.removeItem(at: partials)
        }
        try await withServer { server in
            // Given partial downloads on one file system and the destination on another
            let file = LargeResource(length: 1_500_000)
            server.serve(file, at: "/files/big.bin")
            let client = makeClient(server) {
                $0.partialDownloadsDirectory = partials
                $0.transport = kind.factory
            }
            let destination = folders.files.appendingPathComponent("big.bin")
            // When it is downloaded, then downloaded again over itself
            _ = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(await DownloadTests.holds(destination, file))
            file.version = 2
            let refused = await client.result(Download("/files/big.bin", to: destination)).failure
            #expect(refused?.downloadError == .destinationExists(destination.standardizedFileURL))
            _ = try await client.response(for: Download("/files/big.bin", to: .file(destination, options: [.removePreviousFile])))
            // Then each time the whole file is there, and no copy is left beside it or in the partials
            #expect(await DownloadTests.holds(destination, file))
            #expect(try Self.contents(folders.files) == ["big.bin"])
            #expect(try Self.contents(partials).isEmpty)
        }
    }

    @Test func theFileNameCheckRefusesEveryUnsafeName() {
        #expect(DownloadFileName.safe("report.pdf") == "report.pdf")
        #expect(DownloadFileName.safe("résumé 2.pdf") == "résumé 2.pdf")
        #expect(DownloadFileName.safe(String(repeating: "é", count: 127)) != nil, "254 bytes")
        let unsafe = [
            "", ".", "..", ".hidden", "a/b", "a\\b", "a\u{0}b", "a\u{1F}b", "a\u{7F}b", "a\u{85}b", "a\u{61C}b", "a\u{200E}b", "a\u{200F}b", "a\u{202A}b",
            "a\u{202E}b", "a\u{2066}b", "a\u{2069}b", String(repeating: "é", count: 128),
        ]
        for name in unsafe {
            #expect(DownloadFileName.safe(name) == nil, "\(name.debugDescription)")
        }
        #expect(DownloadFileName.fileNames(inContentDisposition: #"attachment; filename="a \"b\".pdf"; filename*=utf-8'en'c%20d.pdf"#) == ["c d.pdf", #"a "b".pdf"#])
        #expect(DownloadFileName.fileNames(inContentDisposition: "inline; filename=plain.txt") == ["plain.txt"])
    }
}
