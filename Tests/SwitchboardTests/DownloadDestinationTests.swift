import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// Where a download lands (issue 24, point 1): a name from the network never leaves its folder, and
/// nothing is deleted unless the app asked. On both network transports.
@Suite(hangGuard, admission) struct DownloadDestinationTests {
    typealias Folders = DownloadTests.Folders

    /// Names a hostile server could put in a URL's last path component (as sent, percent-encoded).
    static let hostileNames = [
        "..%2Fescaped.txt",  // `../escaped.txt`: one folder up
        "%2e%2e",  // `..`: the folder above, which the old move step removed
        "..%5C..%5Cx.txt",  // backslashes
        "sub%2Fevil.txt",  // a slash without a leading dot: `sub/evil.txt`, into a folder below
        "sub%5Cevil.txt",  // a backslash without a leading dot
        "%2Ebashrc",  // a leading dot
        "%2E%CC%81bashrc",  // a leading dot byte, then a combining mark: one character, a hidden file all the same
        "a%E2%80%8Bb.txt",  // U+200B ZERO WIDTH SPACE (a format character)
        "a%E2%80%A8b.txt",  // U+2028 LINE SEPARATOR
        "evil%E2%80%AEtxt.exe",  // U+202E RIGHT-TO-LEFT OVERRIDE
        "line%0Abreak.txt",  // a control character
        String(repeating: "a", count: 256),  // longer than 255 bytes
    ]

    static func client(_ server: LoopbackServer, _ folders: Folders, _ kind: TransportUnderTest) -> Dispatcher {
        DownloadTests.client(server, folders, on: kind)
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

    /// `Content-Disposition` values a hostile server could send, each naming only unsafe names.
    static let hostileDispositions = [
        #"attachment; filename="../../x""#,
        "attachment; filename*=UTF-8''..%2F..%2Fy",
        #"attachment; filename="../../x"; filename*=UTF-8''..%2F..%2Fy"#,
        #"attachment; filename="..\\..\\x.txt""#,  // unquoted: `..\..\x.txt`
        #"attachment; filename="..""#,
        "attachment; filename*=UTF-8''..",
        #"attachment; filename=".bashrc""#,
        "attachment; filename*=UTF-8''.%CC%81profile",  // a dot byte, then U+0301: a hidden file
        "attachment; filename*=UTF-8''evil%E2%80%AEtxt.exe",  // U+202E RIGHT-TO-LEFT OVERRIDE
        "attachment; filename*=UTF-8''a%E2%80%8Bb.pdf",  // U+200B ZERO WIDTH SPACE
        "attachment; filename*=UTF-8''a%E2%81%A0b.pdf",  // U+2060 WORD JOINER
        "attachment; filename*=UTF-8''a%EF%BB%BFb.pdf",  // U+FEFF ZERO WIDTH NO-BREAK SPACE (inside: Linux's percent-decoding drops a leading one)
        "attachment; filename*=UTF-8''a%E2%80%A8b.pdf",  // U+2028 LINE SEPARATOR
        "attachment; filename*=UTF-8''a%E2%80%A9b.pdf",  // U+2029 PARAGRAPH SEPARATOR
        "attachment; filename*=UTF-8''a%00b.pdf",  // NUL
        "attachment; filename*=UTF-8''line%0Abreak.pdf",  // LF
        "attachment; filename*=UTF-8''" + String(repeating: "a", count: 256),  // longer than 255 bytes
    ]

    @Test func aHostileContentDispositionNameIsNeverSuggested() throws {
        func suggested(_ path: String, _ disposition: String) throws -> String {
            let url = try #require(URL(string: "https://example.com" + path))
            let response = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Disposition": disposition]))
            return DownloadDestination.suggestedFileName(for: response)
        }
        for disposition in Self.hostileDispositions {
            // The URL's name when it is safe, else `download`: never the disposition's.
            #expect(try suggested("/files/report.pdf", disposition) == "report.pdf", "\(disposition.debugDescription)")
            #expect(try suggested("/dl/%2E%CC%81bashrc", disposition) == "download", "\(disposition.debugDescription)")
        }
        // A hostile `filename*` doesn't hide a safe `filename`.
        #expect(try suggested("/files/report.pdf", #"attachment; filename="plain.pdf"; filename*=UTF-8''.%CC%81x"#) == "plain.pdf")
    }

    @Test(arguments: TransportUnderTest.network)
    func aHostileContentDispositionFallsBackToTheURLsNameInTheFolder(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 20_000)
            server.serve(file, at: "/files/report.pdf")
            let client = Self.client(server, folders, kind)
            for disposition in Self.hostileDispositions {
                file.contentDisposition = disposition
                let response = try await client.response(for: Download("/files/report.pdf", to: .folder(folders.files, options: [.removePreviousFile])))
                #expect(response.fileURL?.lastPathComponent == "report.pdf", "\(disposition.debugDescription)")
                #expect(try Self.contents(folders.files) == ["report.pdf"], "\(disposition.debugDescription)")
            }
            #expect(try Self.contents(folders.root) == ["files", "partials"])
            #expect(await DownloadTests.holds(folders.files.appendingPathComponent("report.pdf"), file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aSafeContentDispositionNameIsUsedFilenameStarFirst(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 20_000)
            server.serve(file, at: "/files/report.pdf")
            let client = Self.client(server, folders, kind)
            file.contentDisposition = #"attachment; filename="plain.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"#
            let starred = try await client.response(for: Download("/files/report.pdf", to: folders.files))
            #expect(starred.fileURL?.lastPathComponent == "résumé.pdf")
            file.contentDisposition = #"attachment; filename="plain.pdf""#
            let plain = try await client.response(for: Download("/files/report.pdf", to: folders.files))
            #expect(plain.fileURL?.lastPathComponent == "plain.pdf")
            #expect(try Self.contents(folders.files) == ["plain.pdf", "résumé.pdf"])
            #expect(try Self.contents(folders.root) == ["files", "partials"])
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aFolderDownloadNeverWritesAHiddenFileWhateverFollowsTheDot(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a server that names the file `.` + U+0301 + `profile` (a dot-file on disk)
            let file = LargeResource(length: 10_000)
            server.route("GET", "/dl/*") { file.respond(to: $0) }
            file.contentDisposition = "attachment; filename*=UTF-8''.%CC%81profile"
            // When it is downloaded to a folder
            let response = try await Self.client(server, folders, kind).response(for: Download(server.url("/dl/x.bin").absoluteString, to: folders.files))
            // Then it is named by the URL, and nothing hidden was written
            #expect(response.fileURL?.lastPathComponent == "x.bin")
            #expect(try Self.contents(folders.files) == ["x.bin"])
            #expect(await DownloadTests.holds(folders.files.appendingPathComponent("x.bin"), file))
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

    @Test(arguments: TransportUnderTest.network)
    func aDestinationInThePartialDownloadsFolderIsRefusedBeforeTheBody(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given destinations in the partial-downloads folder: the partial file's own record (with
            // `.removePreviousFile`), another name there, and the folder reached through a link
            let file = LargeResource(length: 40_000)
            server.serve(file, at: "/files/big.bin")
            let client = Self.client(server, folders, kind)
            let linked = folders.root.appendingPathComponent("linked-partials", isDirectory: true)
            try FileManager.default.createDirectory(at: folders.partials, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: linked, withDestinationURL: folders.partials)
            let choices: [@Sendable (URL) -> URL] = [
                { temporary in temporary.deletingPathExtension().appendingPathExtension("json") },
                { [folders] _ in folders.partials.appendingPathComponent("big.bin") },
                { _ in linked.appendingPathComponent("big.bin") },
            ]
            for (index, choice) in choices.enumerated() {
                let chosen = Locked<URL?>(nil)
                let destination = DownloadDestination(resumeKey: "in-partials-\(index)") { temporary, _ in
                    let url = choice(temporary)
                    chosen.withLock { $0 = url }
                    return (url, [.removePreviousFile])
                }
                // When it is downloaded there
                let error = await client.result(Download("/files/big.bin", to: destination)).failure
                // Then it is refused when the head arrives: no body byte kept, nothing asked again
                let url = try #require(chosen.withLock { $0 })
                #expect(error?.downloadError == .destinationNotAllowed(url.standardizedFileURL, reason: "it is in the partial-downloads folder"), "\(String(describing: error))")
                #expect(file.requests.count == index + 1)
                #expect(folders.partialFiles().isEmpty, "\(folders.partialFiles())")
            }
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aDestinationThatIsThePartialFileUnderAnotherNameIsRefused(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a partial file, and at the destination a hard link to it (another name, one inode,
            // as a case-insensitive volume's other spelling of its name would be)
            let file = LargeResource(length: 300_000)
            server.serve(file, at: "/files/f.bin")
            let client = Self.client(server, folders, kind)
            let destination = folders.files.appendingPathComponent("f.bin")
            let planted = file.bytes(0..<100_000)
            try DownloadTests.plant(planted, for: server.url("/files/f.bin"), destination: destination, validator: file.etag, total: Int64(file.length), in: folders.partials)
            let partial = PartialDownload(url: server.url("/files/f.bin"), resumeKey: DownloadDestination.file(destination).resumeKey, directory: folders.partials)
            try FileManager.default.linkItem(at: partial.file, to: destination)
            // When it resumes to that destination, allowed to replace it
            let error = await client.result(Download("/files/f.bin", to: .file(destination, options: [.removePreviousFile]))).failure
            // Then it is refused before the body: the file is as it was
            #expect(error?.downloadError == .destinationNotAllowed(destination.standardizedFileURL, reason: "it is the partial file itself"), "\(String(describing: error))")
            #expect(file.requests.map(\.range) == ["bytes=100000-"])
            #expect(try Data(contentsOf: destination) == planted)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aMissingFolderWithoutCreateIntermediateDirectoriesIsNotAllowed(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 30_000)
            server.serve(file, at: "/files/big.bin")
            let destination = folders.files.appendingPathComponent("missing/big.bin")
            let error = await Self.client(server, folders, kind).result(Download("/files/big.bin", to: .file(destination, options: []))).failure
            #expect(error?.downloadError == .destinationNotAllowed(destination.standardizedFileURL, reason: "its folder doesn't exist"), "\(String(describing: error))")
            #expect(file.requests.count == 1)
            let listing = try Self.contents(folders.files)
            #expect(listing.isEmpty, "the folder was not created")
            #expect(folders.partialFiles().isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aDestinationThatIsNotAFileURLIsNotAllowed(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 30_000)
            server.serve(file, at: "/files/big.bin")
            let remote = try #require(URL(string: "https://example.com/big.bin"))
            let destination = DownloadDestination(resumeKey: "remote") { _, _ in (remote, [.createIntermediateDirectories]) }
            let error = await Self.client(server, folders, kind).result(Download("/files/big.bin", to: destination)).failure
            #expect(error?.downloadError == .destinationNotAllowed(remote, reason: "not a file URL with a file name"), "\(String(describing: error))")
            #expect(file.requests.count == 1)
            #expect(folders.partialFiles().isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aFileThatAppearsAtTheDestinationDuringTheBodyIsNeverReplaced(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a download whose destination was checked (empty) when its head came, held midway
            let file = LargeResource(length: 1 << 20)
            server.serve(file, at: "/files/big.bin")
            file.hold(atOffset: 512 << 10)
            let client = Self.client(server, folders, kind)
            let destination = folders.files.appendingPathComponent("big.bin")
            let received = Locked(Int64(0))
            let outcome = Locked<Result<Response<Download>, NetworkError>?>(nil)
            _ = client.download(Download("/files/big.bin", to: destination), progress: { value in received.withLock { $0 = value.bytesReceived } }) { result in
                outcome.withLock { $0 = result }
            }
            #expect(await eventually(timeout: 20) { received.withLock { $0 } > 0 })
            // When a file appears there before the body ends
            try Data("appeared".utf8).write(to: destination)
            file.release()
            #expect(await eventually(timeout: 20) { outcome.withLock { $0 } != nil })
            // Then the download fails and the file that appeared is untouched; the complete partial
            // file is kept, and a later download allowed to replace it completes it with a 416
            let error = outcome.withLock { $0 }?.failure
            #expect(error?.downloadError == .destinationExists(destination.standardizedFileURL), "\(String(describing: error))")
            #expect(try Data(contentsOf: destination) == Data("appeared".utf8))
            #expect(folders.partialFiles().count == 2, "\(folders.partialFiles())")
            let response = try await client.response(for: Download("/files/big.bin", to: .file(destination, options: [.removePreviousFile])))
            #expect(response.statusCode == 200)
            #expect(file.requests.map(\.range) == [nil, "bytes=\(file.length)-"])
            #expect(await DownloadTests.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aDestinationClosureThatCancelsItsOwnDownloadEndsItOnceAsCancelled(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            // Given a destination closure that cancels the download it chooses for
            let file = LargeResource(length: 1 << 20)
            server.serve(file, at: "/files/big.bin")
            let client = Self.client(server, folders, kind)
            let destinationFile = folders.files.appendingPathComponent("big.bin")
            let handle = Box<DownloadHandle?>(nil)
            let ready = DispatchSemaphore(value: 0)
            let cancelling = DownloadDestination(resumeKey: "self-cancel") { _, _ in
                ready.wait()
                handle.value?.cancel()
                return (destinationFile, [])
            }
            let completions = Locked([NetworkError?]())
            handle.mutate { $0 = client.download(Download("/files/big.bin", to: cancelling), completion: { result in completions.withLock { $0.append(result.failure) } }) }
            ready.signal()
            // When it runs: one completion, `cancelled`
            #expect(await eventually(timeout: 20) { !completions.withLock { $0 }.isEmpty })
            #expect(completions.withLock { $0.first??.isCancelled } == true, "\(completions.withLock { $0 })")
            // Then a download of the same key (which waits for the first to let go) completes, and the
            // first still ended only once
            let after = DownloadDestination(resumeKey: "self-cancel") { _, _ in (destinationFile, [.removePreviousFile]) }
            _ = try await client.response(for: Download("/files/big.bin", to: after))
            #expect(completions.withLock { $0.count } == 1, "\(completions.withLock { $0 })")
            #expect(await DownloadTests.holds(destinationFile, file))
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

    @Test(.enabled(if: otherFileSystem != nil, "needs a writable /dev/shm on another file system"), arguments: TransportUnderTest.network)
    func aLongLegalNameIsReplacedAcrossFileSystems(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        let partials = try #require(Self.otherFileSystem).appendingPathComponent("switchboard-partials-\(UUID().uuidString)", isDirectory: true)
        defer {
            folders.remove()
            try? FileManager.default.removeItem(at: partials)
        }
        try await withServer { server in
            // Given a file under a legal name of 244 bytes, on another file system than the partials
            let file = LargeResource(length: 30_000)
            server.serve(file, at: "/files/big.bin")
            let client = makeClient(server) {
                $0.partialDownloadsDirectory = partials
                $0.transport = kind.factory
            }
            let name = String(repeating: "é", count: 120) + ".bin"
            #expect(DownloadFileName.safe(name) == name)
            let destination = folders.files.appendingPathComponent(name)
            try Data("earlier".utf8).write(to: destination)
            // When a download replaces it (copied beside it, then renamed over it)
            let response = try await client.response(for: Download("/files/big.bin", to: .file(destination, options: [.removePreviousFile])))
            // Then it is replaced and nothing is left beside it
            #expect(response.fileURL?.standardizedFileURL == destination.standardizedFileURL)
            #expect(await DownloadTests.holds(destination, file))
            #expect(try Self.contents(folders.files) == [name])
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
            // A dot byte first, whatever follows: `String.hasPrefix(".")` is false for these.
            ".\u{301}bashrc", ".\u{20D7}ssh", ".\u{301}", "..\u{301}",
            // Format characters (Cf) and separators: invisible in a file list.
            "a\u{AD}b", "a\u{200B}b", "a\u{200C}b", "a\u{200D}b", "a\u{2060}b", "\u{FEFF}a", "a\u{E0001}b", "a\u{2028}b", "a\u{2029}b",
        ]
        for name in unsafe {
            #expect(DownloadFileName.safe(name) == nil, "\(name.debugDescription)")
        }
        #expect(DownloadFileName.safe("a.\u{301}b") == "a.\u{301}b", "a dot inside a name is fine")
        #expect(DownloadFileName.safe("naïve café.txt") == "naïve café.txt", "combining marks and non-ASCII letters are fine")
        #expect(DownloadFileName.fileNames(inContentDisposition: #"attachment; filename="a \"b\".pdf"; filename*=utf-8'en'c%20d.pdf"#) == ["c d.pdf", #"a "b".pdf"#])
        #expect(DownloadFileName.fileNames(inContentDisposition: "inline; filename=plain.txt") == ["plain.txt"])
    }
}
