import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

#if canImport(Glibc)
/// The libcurl transport's own edges: what it refuses to load, and what it refuses to send.
@Suite(TransportUnderTest.curlOnly, hangGuard, admission)
struct CurlTransportTests {
    @Test func aLibcurlOlderThan768IsRefusedWithItsVersionNamed() {
        #expect(CurlLibrary.refusal(version: "7.67.0", versionNumber: 0x07_43_00)?.description.contains("libcurl 7.67.0 is older than 7.68") == true)
        #expect(CurlLibrary.refusal(version: "7.68.0", versionNumber: 0x07_44_00) == nil)
        #expect(CurlLibrary.refusal(version: "8.5.0", versionNumber: 0x08_05_00) == nil)
    }

    @Test func theLoadedLibraryIsNamed() throws {
        let version = try #require(CurlTransport.libraryVersion)
        #expect(version.split(separator: ".").count >= 2)
        #expect((try? TransportFactory.curlIfAvailable())?.name == "libcurl")
    }

    @Test func anUnavailableLibraryFailsEverySendWithTheReason() async {
        let transport = UnavailableTransport(reason: "the libcurl transport is not available: test")
        let error = await withCheckedContinuation { continuation in
            _ = transport.perform(URLRequest(url: URL(string: "http://127.0.0.1:9/")!), options: TransferOptions(timeout: 5)) { result in
                continuation.resume(returning: result.failure)
            }
        }
        guard case .transport(let urlError)? = error else {
            Issue.record("expected a transport error, got \(String(describing: error))")
            return
        }
        #expect(urlError.code == .cannotLoadFromNetwork)
        #expect(urlError.localizedDescription.contains("not available: test"))
    }

    @Test func urlsItCannotSendFailBeforeAnythingIsSent() async throws {
        let transport = try CurlTransport()
        for url in ["ftp://127.0.0.1/file", "file:///etc/passwd"] {
            let record = await transfer(transport, TransportRequest(URLRequest(url: URL(string: url)!)))
            #expect(record.error?.urlErrorCode == .unsupportedURL, "\(url): \(String(describing: record.result))")
            #expect(record.completions == 1)
        }
    }

    @Test func aNameThatDoesNotResolveIsCannotFindHost() async throws {
        let record = await transfer(try CurlTransport(), TransportRequest(URLRequest(url: URL(string: "http://no-such-host.invalid/")!)), timeout: 30)
        #expect(record.error?.urlErrorCode == .cannotFindHost, "\(String(describing: record.result))")
    }

    @Test func releasingTheTransportEndsItsTransfersCancelled() async throws {
        try await withServer { server in
            var transport: CurlTransport? = try CurlTransport()
            let outcome = Box<NetworkError?>(nil)
            let done = Box(0)
            _ = transport?.perform(URLRequest(url: server.url("/delay/30000")), options: TransferOptions(timeout: 60)) { result in
                outcome.mutate { $0 = result.failure }
                done.mutate { $0 += 1 }
            }
            #expect(await eventually { server.hits("/delay/30000") == 1 })
            transport = nil
            #expect(await eventually(timeout: 5 * timeScale) { done.value == 1 })
            #expect(outcome.value?.isCancelled == true)
        }
    }
}
#endif
