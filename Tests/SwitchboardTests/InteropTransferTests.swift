import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import Testing

/// Uploads and downloads against httpbin: our multipart layout as another server parses it, and a
/// download resumed with `Range`/`If-Range` from httpbin's `/range` endpoint.
@Suite(.enabled(if: httpbinURL != nil, "set HTTPBIN_URL to an httpbin server to run the interop suite"), hangGuard, admission)
struct InteropTransferTests {
    struct Post: Request {
        var form: MultipartFormData
        var parameters: JSON?
        var method: HTTPMethod { .post }
        var path: String { "/post" }
        var body: RequestBody? { .multipart(form) }
    }

    func client(_ configure: (inout Configuration) -> Void = { _ in }) throws -> Dispatcher {
        let base = try #require(httpbinURL)
        return Dispatcher(
            configuration: Configuration {
                $0.baseURL = base
                $0.callbackQueue = .immediate
                $0.transport = interopTransport
                configure(&$0)
            })
    }

    @Test func httpbinParsesOurFormsFieldsAndFiles() async throws {
        var form = MultipartFormData()
        form.append("Ada Lovelace", name: "name")
        form.append(Data("hello, file".utf8), name: "greeting", fileName: "greeting.txt")
        form.append(Data("{\"a\":1}".utf8), name: "config", fileName: "config.json")
        let response = try await client().response(for: Post(form: form, parameters: ["team": "engines"]))
        #expect(response.json["form"]["name"] == "Ada Lovelace")
        #expect(response.json["form"]["team"] == "engines")
        #expect(response.json["files"]["greeting"] == "hello, file")
        #expect(response.json["files"]["config"] == "{\"a\":1}")
        #expect(response.json["headers"]["Content-Type"].string == form.contentType)
    }

    @Test func aLargeFormFromATemporaryFileReachesHttpbinWhole() async throws {
        var form = MultipartFormData()
        let text = String(repeating: "0123456789abcdef", count: 8192)  // 128 KiB
        form.append(Data(text.utf8), name: "big", fileName: "big.txt")
        let response = try await client { $0.multipartMemoryThreshold = 1024 }.response(for: Post(form: form))
        #expect(response.json["files"]["big"].string == text)
    }

    @Test func aDownloadFromHttpbinResumesFromAPartialFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-interop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = try client { $0.partialDownloadsDirectory = folder.appendingPathComponent("partials") }
        let destination = folder.appendingPathComponent("range.bin")
        let whole = try await client.response(for: Download("/range/20000", to: destination))
        let expected = try Data(contentsOf: destination)
        #expect(expected.count == 20_000)
        let etag = try #require(whole.headers["ETag"])

        // What an interrupted download leaves: the first 7,000 bytes and the validator.
        let url = try #require(whole.httpResponse.url)
        let partial = PartialDownload(url: url, resumeKey: DownloadDestination.file(destination).resumeKey, directory: folder.appendingPathComponent("partials"))
        try expected.prefix(7_000).write(to: partial.file)
        try partial.save(PartialDownload.Record(key: partial.key, validator: etag, kind: .etag, totalLength: 20_000))
        try FileManager.default.removeItem(at: destination)

        let resumed = try await client.response(for: Download("/range/20000", to: destination))
        #expect(resumed.statusCode == 206)
        #expect(try Data(contentsOf: destination) == expected)
    }
}
