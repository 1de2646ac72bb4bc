import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import Testing

/// The HTTPS server of the interop suite, from `HTTPS_URL`: hypercorn over TLS with a certificate
/// from a CA that `.ci/run` adds to the system's CA store, offering HTTP/2 by ALPN
/// (`Tests/Interop/tls_app.py`). Without the variable the suite is skipped.
let httpsURL: URL? = ProcessInfo.processInfo.environment["HTTPS_URL"].flatMap(URL.init(string:))

/// TLS with the system's CA store, HTTP/2 when the server offers it, and content codings, on each
/// network transport.
@Suite(.enabled(if: httpsURL != nil, "set HTTPS_URL to run the TLS interop suite (.ci/run does)"), timeLimit(minutes: 1))
struct TLSInteropTests {
    func client(_ kind: TransportUnderTest) throws -> Dispatcher {
        let base = try #require(httpsURL)
        return Dispatcher(
            configuration: Configuration {
                $0.baseURL = base
                $0.callbackQueue = .immediate
                $0.transport = kind.factory
            })
    }

    @Test(arguments: TransportUnderTest.network) func aCertificateFromTheSystemStoreIsTrusted(_ kind: TransportUnderTest) async throws {
        let response = try await client(kind).response(for: Get("/version"))
        #expect(response.json["ok"] == true)
        print("TLSInteropTests: \(kind) spoke HTTP/\(response.json["http_version"].string ?? "?") over TLS")
    }

    @Test(TransportUnderTest.curlOnly) func theLibcurlTransportSpeaksHTTP2WhenTheServerOffersIt() async throws {
        let responses = try await withThrowingTaskGroup(of: String.self) { group in
            let client = try client(.curl)
            for i in 0..<10 {
                group.addTask { try await client.response(for: Get("/version?i=\(i)")).json["http_version"].string ?? "?" }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(responses.count == 10 && responses.allSatisfy { $0 == "2" }, "\(responses)")
    }

    @Test(arguments: TransportUnderTest.network, ["gzip", "deflate", "brotli"])
    func compressedBodiesArriveDecoded(_ kind: TransportUnderTest, coding: String) async throws {
        // The same outcome on every transport: FoundationNetworking's libcurl decodes br as well.
        let response = try await client(kind).response(for: Get("/\(coding)"))
        #expect(response.json["ok"] == true && response.json["path"] == .string("/\(coding)"), "\(kind) \(coding): \(response.json)")
    }
}
