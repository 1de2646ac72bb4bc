import Foundation
import LoopbackServer
import Testing

/// Large transfers in bounded memory, measured in a process of their own (`switchboard-probe`), so
/// that nothing else the suite does moves the figure: a 200 MiB multipart upload from disk and a
/// 256 MiB download to a file may each raise the peak resident memory by at most 64 MiB. Both are
/// checked byte for byte. (The benchmark measures 1 GiB; see docs/perf-log.md.) Not under a sanitizer:
/// its bookkeeping grows with every allocation, so the figure means nothing there, and moving and
/// checking half a GiB through instrumented code takes the CPU from every other test for a minute
/// (their time bounds then fail). The bytes are checked byte for byte by the other transfer suites.
@Suite(.serialized, .enabled(if: !(runsUnderThreadSanitizer || runsUnderAddressSanitizer), "memory figures mean nothing under a sanitizer"), hangGuard, admission)
struct TransferMemoryTests {
    static let limitKiB = 64 << 10

    @Test func a200MiBMultipartUploadFromDiskStaysWithin64MiB() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-memory-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("big.bin")
        let resource = LargeResource(length: 200 << 20)
        let expected = try await offPool {
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            let handle = try FileHandle(forWritingTo: file)
            for start in stride(from: 0, to: resource.length, by: 8 << 20) {
                try handle.write(contentsOf: resource.bytes(start..<min(resource.length, start + (8 << 20))))
            }
            try handle.close()
            return resource.checksum()
        }

        try await withServer { server in
            let outcome = try await ChildProcessFaultTests.runProbe(arguments: ["upload", server.url("/upload/sink").absoluteString, file.path], limit: 240)
            let fields = outcome.output.split(separator: " ", maxSplits: 3).map(String.init)
            try #require(fields.count == 4 && fields[0] == "succeeded", "\(outcome.output) \(outcome.errors)")
            #expect(fields[1] == "200")
            let reply = try JSONSerialization.jsonObject(with: Data(fields[3].utf8)) as? [String: Any]
            let part = (reply?["parts"] as? [[String: Any]])?.first
            #expect(part?["checksum"] as? String == expected, "the file arrived byte for byte")
            #expect(part?["filename"] as? String == "big.bin")
            let growth = Int(fields[2]) ?? .max
            #expect(growth >= 0, "the probe could read its memory")
            #expect(growth < Self.limitKiB, "peak memory rose \(growth) KiB for a 200 MiB upload")
        }
    }

    @Test func a256MiBDownloadToAFileStaysWithin64MiB() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-memory-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withServer { server in
            let resource = LargeResource(length: 256 << 20)
            server.serve(resource, at: "/files/large.bin")
            let destination = folder.appendingPathComponent("large.bin")
            let outcome = try await ChildProcessFaultTests.runProbe(arguments: ["download", server.url("/files/large.bin").absoluteString, destination.path], limit: 240)
            let fields = outcome.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").map(String.init)
            try #require(fields.count == 4 && fields[0] == "succeeded", "\(outcome.output) \(outcome.errors)")
            #expect(fields[1] == "200" && fields[3] == String(resource.length))
            let (received, expected) = try await offPool {
                var checksum = Checksum()
                let reader = try FileHandle(forReadingFrom: destination)
                while let chunk = try reader.read(upToCount: 8 << 20), !chunk.isEmpty { checksum.update(chunk) }
                try reader.close()
                return (checksum.hex, resource.checksum())
            }
            #expect(received == expected, "the file is byte for byte the resource")
            let growth = Int(fields[2]) ?? .max
            #expect(growth >= 0, "the probe could read its memory")
            #expect(growth < Self.limitKiB, "peak memory rose \(growth) KiB for a 256 MiB download")
        }
    }
}
