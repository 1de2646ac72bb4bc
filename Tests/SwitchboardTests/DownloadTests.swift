import Foundation
import LoopbackServer
@testable import Switchboard
import Testing

/// Downloads to a file: progress, resuming with `Range`/`If-Range` after an abort, a changed file, a
/// server that ignores ranges, 416, pause and resume, and the partial files left (none after success).
@Suite(hangGuard, admission) struct DownloadTests {
    /// A fresh folder for destinations and one for partial downloads.
    struct Folders {
        let root: URL
        var files: URL { root.appendingPathComponent("files", isDirectory: true) }
        var partials: URL { root.appendingPathComponent("partials", isDirectory: true) }

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-download-tests-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("files"), withIntermediateDirectories: true)
        }

        func partialFiles() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: partials.path)) ?? []).sorted() }
        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    static func client(
        _ server: LoopbackServer, _ folders: Folders, on kind: TransportUnderTest, _ configure: (inout Configuration) -> Void = { _ in }
    ) -> Dispatcher {
        makeClient(server, on: kind) {
            $0.partialDownloadsDirectory = folders.partials
            // These tests hold files mid-way while they act; a loaded pool (the whole suite under TSan)
            // can take longer than the default 30 s to come back to them.
            $0.idleTimeout = 120
            configure(&$0)
        }
    }

    /// Whether the file at `url` holds exactly `file`'s bytes (checked off the cooperative pool: a few
    /// MiB through instrumented code under the thread sanitizer would hold up other tests).
    static func holds(_ url: URL, _ file: LargeResource) async -> Bool {
        (try? await offPool { Checksum.of(try Data(contentsOf: url)) == file.checksum() }) ?? false
    }

    /// A served file whose first download is cut off at `offset`: the file, a client and the destination.
    static func cutOff(
        _ server: LoopbackServer, _ folders: Folders, length: Int, at offset: Int, on kind: TransportUnderTest, configure: (LargeResource) -> Void = { _ in }
    ) async -> (LargeResource, Dispatcher, URL) {
        let file = LargeResource(length: length)
        configure(file)
        server.serve(file, at: "/files/big.bin")
        let client = Self.client(server, folders, on: kind)
        let destination = folders.files.appendingPathComponent("big.bin")
        file.abort(atOffset: offset)
        _ = await client.result(Download("/files/big.bin", to: destination))
        return (file, client, destination)
    }

    /// A request class, and a subclass that is a download.
    class Fetch: Request, @unchecked Sendable {  // immutable: every stored property is a `let`
        let path: String
        init(_ path: String) { self.path = path }
        var responseFormat: ResponseFormat { .data }
    }
    final class FileFetch: Fetch, DownloadRequest, @unchecked Sendable {  // immutable, as its superclass
        let destination: DownloadDestination
        init(_ path: String, to file: URL) {
            destination = .file(file)
            super.init(path)
        }
    }

    /// A download sent as its superclass's type is still a download: its body goes to its file.
    @Test(arguments: TransportUnderTest.network) func aDownloadSentAsItsSuperclassIsStillADownload(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 100_000)
            server.serve(file, at: "/files/sub.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("sub.bin")
            let request: Fetch = FileFetch("/files/sub.bin", to: destination)
            let response = try await client.response(for: request)
            #expect(response.fileURL == destination)
            #expect(response.data.isEmpty, "the body went to the file, not to memory")
            #expect(await Self.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network) func aDownloadGoesToItsFileWithProgressThatEndsAtTheTotal(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 3 << 20)
            server.serve(file, at: "/files/big.bin")
            let progress = Locked([TransferProgress]())
            let destination = folders.files.appendingPathComponent("big.bin")
            let response = try await Self.client(server, folders, on: kind).response(for: Download("/files/big.bin", to: destination)) { value in
                progress.withLock { $0.append(value) }
            }
            #expect(response.fileURL == destination.standardizedFileURL)
            #expect(response.data.isEmpty && response.statusCode == 200)
            #expect(await Self.holds(destination, file))
            #expect(folders.partialFiles().isEmpty, "nothing left behind")
            let received = progress.withLock { $0 }.map(\.bytesReceived)
            #expect(received == received.sorted(), "monotonic")
            #expect(received.last == Int64(file.length))
            #expect(progress.withLock { $0 }.last?.expectedBytesToReceive == Int64(file.length))
        }
    }

    @Test(arguments: TransportUnderTest.network) func aDirectoryDestinationTakesTheURLsLastPathComponent(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 100_000)
            server.serve(file, at: "/files/report.pdf")
            let response = try await Self.client(server, folders, on: kind).response(for: Download("/files/report.pdf", to: folders.files))
            #expect(response.fileURL?.lastPathComponent == "report.pdf")
            #expect(await Self.holds(folders.files.appendingPathComponent("report.pdf"), file))
            // An existing file is replaced only when the destination says so.
            file.version = 2
            let refused = await Self.client(server, folders, on: kind).result(Download("/files/report.pdf", to: folders.files)).failure
            #expect(refused?.downloadError == .destinationExists(folders.files.appendingPathComponent("report.pdf").standardizedFileURL))
            let replacing = DownloadDestination.folder(folders.files, options: [.removePreviousFile])
            _ = try await Self.client(server, folders, on: kind).response(for: Download("/files/report.pdf", to: replacing))
            #expect(await Self.holds(folders.files.appendingPathComponent("report.pdf"), file))
        }
    }

    @Test(arguments: TransportUnderTest.network, [true, false])
    func aDownloadCutOffMidBodyResumesToAByteIdenticalFile(_ kind: TransportUnderTest, _ etag: Bool) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 4 << 20)
            file.sendValidators(etag: etag, lastModified: true)
            server.serve(file, at: "/files/big.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("big.bin")
            file.abort(atOffset: 1_500_000)
            let first = await client.result(Download("/files/big.bin", to: destination)).failure
            #expect(first?.isTransport == true, "\(String(describing: first))")
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            #expect(folders.partialFiles().count == 2, "the partial file and its record stay: \(folders.partialFiles())")

            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(response.statusCode == 206)
            let resumed = file.requests.last
            #expect(resumed?.range == "bytes=1500000-")
            #expect(resumed?.ifRange == (etag ? file.etag : file.lastModified))
            #expect(await Self.holds(destination, file))
            #expect(folders.partialFiles().isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aFileThatChangedMeanwhileIsDownloadedAgainFromTheStart(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let (file, client, destination) = await Self.cutOff(server, folders, length: 2 << 20, at: 700_000, on: kind)
            file.version = 2  // new bytes, new validators: If-Range no longer matches, so a 200 comes
            let response = try await client.response(for: Download("/files/big.bin", to: destination))
            #expect(response.statusCode == 200)
            #expect(file.requests.last?.range == "bytes=700000-")
            #expect(await Self.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aServerThatIgnoresTheRangeIsWrittenFromTheStart(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let (file, client, destination) = await Self.cutOff(server, folders, length: 2 << 20, at: 900_000, on: kind)
            file.ignoresRanges = true
            let progress = Locked([Int64]())
            let response = try await client.response(for: Download("/files/big.bin", to: destination)) { value in
                progress.withLock { $0.append(value.bytesReceived) }
            }
            #expect(response.statusCode == 200)
            #expect(file.requests.last?.range == "bytes=900000-", "it asked to resume")
            #expect(await Self.holds(destination, file))
            let received = progress.withLock { $0 }
            #expect(received == received.sorted() && received.last == Int64(file.length))
        }
    }

    @Test(arguments: TransportUnderTest.network) func withoutAValidatorNothingIsKeptToResumeFrom(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 1 << 20)
            file.sendValidators(etag: false, lastModified: false)
            server.serve(file, at: "/files/plain.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("plain.bin")
            file.abort(atOffset: 300_000)
            _ = await client.result(Download("/files/plain.bin", to: destination))
            #expect(folders.partialFiles().isEmpty, "bytes without a validator can't be resumed safely")
            _ = try await client.response(for: Download("/files/plain.bin", to: destination))
            #expect(file.requests.last?.range == nil)
            #expect(await Self.holds(destination, file))
        }
    }

    /// Plants a partial file and its record as an earlier run would have left them.
    static func plant(
        _ bytes: Data, for url: URL, destination: URL, validator: String, kind: PartialDownload.ValidatorKind = .etag, total: Int64?, in directory: URL
    ) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let partial = PartialDownload(url: url, resumeKey: DownloadDestination.file(destination).resumeKey, directory: directory)
        try bytes.write(to: partial.file)
        try partial.save(PartialDownload.Record(key: partial.key, validator: validator, kind: kind, totalLength: total))
    }

    @Test(arguments: TransportUnderTest.network)
    func a416ForAFileAlreadyWholeCompletesItAndAnyOther416StartsOver(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 500_000)
            server.serve(file, at: "/files/f.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("f.bin")
            let url = server.url("/files/f.bin")
            // The whole file is already there (cut off after its last byte): the 416 names its length.
            let length = Int64(file.length)
            try Self.plant(file.bytes(0..<file.length), for: url, destination: destination, validator: file.etag, total: length, in: folders.partials)
            let whole = try await client.response(for: Download("/files/f.bin", to: destination))
            #expect(whole.statusCode == 200)
            #expect(file.requests.last?.range == "bytes=500000-")
            #expect(await Self.holds(destination, file))
            #expect(folders.partialFiles().isEmpty)

            // A partial file longer than the file: 416, then a clean start (replacing the first one).
            try Self.plant(Data(count: 600_000), for: url, destination: destination, validator: file.etag, total: nil, in: folders.partials)
            let again = try await client.response(for: Download("/files/f.bin", to: .file(destination, options: [.removePreviousFile])))
            #expect(again.statusCode == 200)
            #expect(file.requests.suffix(2).map(\.range) == ["bytes=600000-", nil])
            #expect(await Self.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network) func aFailureStatusFailsWithoutTouchingTheDestination(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let destination = folders.files.appendingPathComponent("missing.bin")
            let error = await Self.client(server, folders, on: kind).result(Download("/status/404", to: destination)).failure
            #expect(error?.statusCode == 404, "\(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            #expect(folders.partialFiles().isEmpty)
        }
    }

    @Test(arguments: TransportUnderTest.network) func twoDownloadsToOneDestinationDoNotRunAtOnce(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 2 << 20)
            file.hold(atOffset: 1 << 20)
            server.serve(file, at: "/files/slow.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("slow.bin")
            // Started from this thread (not a child task, which a busy cooperative pool may start late).
            let first = Locked<Result<Response<Download>, NetworkError>?>(nil)
            client.send(Download("/files/slow.bin", to: destination)) { result in first.withLock { $0 = result } }
            #expect(await eventually(timeout: 20) { file.requests.count == 1 })
            let asked = DispatchTime.now()
            let second = await client.result(Download("/files/slow.bin", to: destination)).failure
            let waited = Double(DispatchTime.now().uptimeNanoseconds - asked.uptimeNanoseconds) / 1e9
            file.release()
            #expect(second?.invalidReason?.contains("already running") == true, "\(String(describing: second))")
            #expect(waited >= 3, "the second waits 3 s for the first to end before it gives up (waited \(waited) s)")
            #expect(await eventually(timeout: 20) { first.withLock { $0 } != nil })
            let firstResult = first.withLock { $0 }
            #expect((try? firstResult?.get())?.fileURL != nil, "\(String(describing: firstResult))")
            #expect(await Self.holds(destination, file))
        }
    }

    @Test(arguments: TransportUnderTest.network) func pauseKeepsWhatArrivedAndResumeAsksForTheRest(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 4 << 20)
            file.hold(atOffset: 1 << 20)  // the server stops midway until released: paused there, whatever the load
            server.serve(file, at: "/files/slow.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("slow.bin")
            let received = Locked([Int64]())
            let outcome = Locked<Result<Response<Download>, NetworkError>?>(nil)
            let completions = Locked(0)
            let handle = client.download(
                Download("/files/slow.bin", to: destination),
                progress: { value in
                    received.withLock { $0.append(value.bytesReceived) }
                }
            ) { result in
                completions.withLock { $0 += 1 }
                outcome.withLock { $0 = result }
            }
            #expect(await eventually(timeout: 60) { received.withLock { $0.last ?? 0 } > 0 })
            handle.pause()
            #expect(handle.isPaused)
            #expect(await eventually(timeout: 60) { folders.partialFiles().count == 2 })
            file.release()
            let transport = try #require(client.transportInUse)
            #expect(await settled(transport), "the paused transfer's end is reported")
            #expect(completions.withLock { $0 } == 0, "a pause is not the end")
            let partial = try #require(folders.partialFiles().first { $0.hasSuffix(".partial") })
            let kept = try #require(FileManager.default.attributesOfItem(atPath: folders.partials.appendingPathComponent(partial).path)[.size] as? Int)
            #expect(kept > 0)
            let firstSend = handle.currentSendID
            handle.resume()
            #expect(await eventually(timeout: 60) { outcome.withLock { $0 } != nil })
            #expect(handle.isFinished && completions.withLock { $0 } == 1)
            #expect(handle.currentSendID != firstSend)
            #expect(file.requests.last?.range == "bytes=\(kept)-", "resumed from exactly what the pause kept")
            #expect(await Self.holds(destination, file))
            let values = received.withLock { $0 }
            #expect(values == values.sorted(), "monotonic across the pause")
            #expect(values.last == Int64(file.length))
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancelEndsTheDownloadOnceAndKeepsThePartialFile(_ kind: TransportUnderTest) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 4 << 20)
            file.hold(atOffset: 1 << 20)
            server.serve(file, at: "/files/slow.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("slow.bin")
            let outcomes = Locked([NetworkError?]())
            let received = Locked(Int64(0))
            let handle = client.download(
                Download("/files/slow.bin", to: destination),
                progress: { value in
                    received.withLock { $0 = value.bytesReceived }
                }
            ) { result in outcomes.withLock { $0.append(result.failure) } }
            #expect(await eventually(timeout: 60) { received.withLock { $0 } > 0 })
            handle.cancel()
            handle.cancel()
            #expect(await eventually(timeout: 60) { outcomes.withLock { $0.count } == 1 })
            // A resume after the end does nothing: with the file released, a wrongful restart would
            // run to the end and be seen (a request, a new send, a second outcome, no partial file).
            file.release()
            let requestsBefore = file.requests.count
            let sendBefore = handle.currentSendID
            handle.resume()
            #expect(handle.isFinished && handle.currentSendID == sendBefore)
            #expect(await settled(client))
            #expect(file.requests.count == requestsBefore)
            #expect(outcomes.withLock { $0.count } == 1)
            #expect(outcomes.withLock { $0.first??.isCancelled } == true)
            #expect(folders.partialFiles().count == 2, "a later download resumes from it")
        }
    }

    /// Every byte that arrived before a cancel or a pause is on disk, however few (30,720 here: less
    /// than any write buffer), and the next send asks for the rest: a `206` from exactly there.
    @Test(arguments: TransportUnderTest.network, ["cancel", "pause"])
    func everyByteReceivedBeforeACancelOrPauseIsKeptAndResumedFrom(_ kind: TransportUnderTest, _ how: String) async throws {
        let folders = try Folders()
        defer { folders.remove() }
        try await withServer { server in
            let file = LargeResource(length: 1 << 20)
            file.hold(atOffset: 30_720)
            server.serve(file, at: "/files/few.bin")
            let client = Self.client(server, folders, on: kind)
            let destination = folders.files.appendingPathComponent("few.bin")
            let outcomes = Locked([Result<Response<Download>, NetworkError>]())
            let handle = client.download(Download("/files/few.bin", to: destination), completion: { result in outcomes.withLock { $0.append(result) } })
            // The transport's own count (the progress events are held to one per 16 ms).
            #expect(await eventually(timeout: 30) { client.runningRequests.first?.progress?.bytesReceived == 30_720 })
            if how == "pause" { handle.pause() } else { handle.cancel() }
            let transport = try #require(client.transportInUse)
            #expect(await settled(transport))
            let partial = try #require(folders.partialFiles().first { $0.hasSuffix(".partial") })
            let size = try FileManager.default.attributesOfItem(atPath: folders.partials.appendingPathComponent(partial).path)[.size] as? Int
            #expect(size == 30_720, "every byte received is on disk")
            file.release()
            if how == "pause" {
                handle.resume()
                #expect(await eventually(timeout: 30) { outcomes.withLock { $0.count } == 1 })
                #expect(outcomes.withLock { $0.first?.failure } == nil)
            } else {
                #expect(outcomes.withLock { $0.count == 1 && $0.first?.failure?.isCancelled == true })
                let response = try await client.response(for: Download("/files/few.bin", to: destination))
                #expect(response.statusCode == 206)
            }
            #expect(file.requests.last?.range == "bytes=30720-")
            #expect(await Self.holds(destination, file))
        }
    }

    @Test func thePartialFilesAreNamedWithoutTheHomeDirectory() {
        let home = NSHomeDirectory()
        #expect(PartialDownload.portablePath(home + "/Documents/a.bin") == "~/Documents/a.bin")
        #expect(PartialDownload.portablePath("/var/data/a.bin") == "/var/data/a.bin")
        let file = DownloadDestination.file(URL(fileURLWithPath: home + "/Documents/a.bin"))
        let one = PartialDownload(url: URL(string: "https://h/a.bin")!, resumeKey: file.resumeKey, directory: URL(fileURLWithPath: "/p"))
        #expect(one.key == "https://h/a.bin\n~/Documents/a.bin")
        #expect(DownloadDestination.folder(URL(fileURLWithPath: home + "/Documents", isDirectory: true)).resumeKey == "~/Documents/")
        #expect(one.file.lastPathComponent.count == 32 + ".partial".count)
    }
}

extension NetworkError {
    /// The ``DownloadError`` of a ``NetworkError/download(_:)``.
    var downloadError: DownloadError? { if case .download(let error) = self { error } else { nil } }
}

extension DownloadError {
    /// The reason of a case that has one.
    var reason: String? {
        switch self {
        case .destinationNotAllowed(_, let reason), .destinationThrew(let reason), .unusableResume(let reason): reason
        case .destinationExists, .lengthMismatch: nil
        }
    }
}
