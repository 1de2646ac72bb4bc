import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import Testing

/// The HTTPS server of the interop suite, from `HTTPS_URL`: hypercorn over TLS with a certificate
/// from a throwaway CA (`HTTPS_CA_FILE`, never in the system's store), offering HTTP/2 by ALPN
/// (`Tests/Interop/tls_app.py`). Without the variable the suite is skipped.
let httpsURL: URL? = ProcessInfo.processInfo.environment["HTTPS_URL"].flatMap(URL.init(string:))

/// The throwaway CA that signed the HTTPS server's certificate (`HTTPS_CA_FILE`): never in the
/// machine's trust store, trusted here through a policy, as an app trusts its private CA.
let httpsCAFile: URL? = ProcessInfo.processInfo.environment["HTTPS_CA_FILE"].map(URL.init(fileURLWithPath:))

/// TLS with a private CA trusted through a policy, HTTP/2 when the server offers it (one connection
/// for concurrent sends), and content codings, on the libcurl transport; the system's trust refusing
/// that CA, on both.
@Suite(.enabled(if: httpsURL != nil, "set HTTPS_URL to run the TLS interop suite (.ci/run does)"), hangGuard, admission)
struct TLSInteropTests {
    /// A libcurl client trusting the server's CA through ``Configuration/serverTrust``.
    func client() throws -> Dispatcher {
        let base = try #require(httpsURL)
        let caFile = try #require(httpsCAFile, "HTTPS_CA_FILE names the CA of HTTPS_URL's certificate")
        let ca = try TrustCertificate.certificates(pem: Data(contentsOf: caFile))
        return Dispatcher(
            configuration: Configuration {
                $0.baseURL = base
                $0.callbackQueue = .immediate
                $0.transport = .curl
                $0.serverTrust = ServerTrust(defaultPolicy: .extraCAs(ca))
            })
    }

    @Test(TransportUnderTest.curlOnly) func aPrivateCAIsTrustedThroughThePolicy() async throws {
        let response = try await client().response(for: Get("/version"))
        #expect(response.json["ok"] == true)
        print("TLSInteropTests: libcurl spoke HTTP/\(response.json["http_version"].string ?? "?") over TLS")
    }

    /// The machine's store doesn't hold the CA: the system's trust refuses the server, on both
    /// transports, with the same typed error.
    @Test(arguments: TransportUnderTest.network) func theSystemsTrustRefusesTheServer(_ kind: TransportUnderTest) async throws {
        let base = try #require(httpsURL)
        let plain = Dispatcher(
            configuration: Configuration {
                $0.baseURL = base; $0.callbackQueue = .immediate; $0.transport = kind.factory
            })
        do {
            _ = try await plain.response(for: Get("/version"))
            Issue.record("\(kind): a server whose CA is not in the system's store was trusted")
        } catch NetworkError.serverTrustFailed(let failure) {
            #expect(failure.check == .chain && failure.host == "localhost", "\(failure)")
        }
    }

    /// The response and the monitors say which protocol carried it.
    @Test(TransportUnderTest.curlOnly) func theResponseAndTheMonitorsSayHTTP2() async throws {
        let monitor = VersionMonitor()
        let base = try #require(httpsURL)
        let ca = try TrustCertificate.certificates(pem: Data(contentsOf: try #require(httpsCAFile)))
        let dispatcher = Dispatcher(
            configuration: Configuration {
                $0.baseURL = base
                $0.callbackQueue = .immediate
                $0.transport = .curl
                $0.serverTrust = ServerTrust(defaultPolicy: .onlyCAs(ca))
                $0.monitors = [monitor]
            })
        let response = try await dispatcher.response(for: Get("/version"))
        #expect(response.httpVersion == "HTTP/2")
        #expect(monitor.versions.value == ["received HTTP/2", "finished HTTP/2"])
    }

    final class VersionMonitor: EventMonitor {
        let versions = Box<[String]>([])
        func request(_ send: SendContext, didReceive result: Result<TransportResponse, NetworkError>, attempt: Int) {
            if case .success(let response) = result { versions.mutate { $0.append("received \(response.httpVersion ?? "nil")") } }
        }
        func request(_ send: SendContext, didFinish result: Result<ResponseContext, NetworkError>) {
            if case .success(let context) = result { versions.mutate { $0.append("finished \(context.httpVersion ?? "nil")") } }
        }
    }

    @Test(TransportUnderTest.curlOnly) func theLibcurlTransportSpeaksHTTP2WhenTheServerOffersIt() async throws {
        let responses = try await withThrowingTaskGroup(of: String.self) { group in
            let client = try client()
            for i in 0..<10 {
                group.addTask { try await client.response(for: Get("/version?i=\(i)")).json["http_version"].string ?? "?" }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(responses.count == 10 && responses.allSatisfy { $0 == "2" }, "\(responses)")
    }

    /// On a cold start (no connection open), concurrent sends to an HTTP/2 server wait for the first
    /// connection and share it (`CURLOPT_PIPEWAIT`, set for https): one client port for all of them.
    /// Without it, each would open a connection of its own.
    @Test(TransportUnderTest.curlOnly) func concurrentSendsOnAColdStartShareOneHTTP2Connection() async throws {
        let client = try client()
        let ports = try await withThrowingTaskGroup(of: Int?.self) { group in
            for i in 0..<8 {
                group.addTask { try await client.response(for: Get("/version?cold=\(i)")).json["client_port"].int }
            }
            return try await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        #expect(ports.count == 8 && !ports.contains(nil))
        #expect(Set(ports).count == 1, "8 sends used \(Set(ports).count) connections: \(ports)")
    }

    @Test(TransportUnderTest.curlOnly, arguments: ["gzip", "deflate", "brotli"])
    func compressedBodiesArriveDecoded(coding: String) async throws {
        let response = try await client().response(for: Get("/\(coding)"))
        #expect(response.json["ok"] == true && response.json["path"] == .string("/\(coding)"), "\(coding): \(response.json)")
    }
}
