import Dispatch
import Foundation
import LoopbackServer
import Switchboard

/// Seed 001's security policy: a pinned server trusted, a wrong pin refused, on the libcurl transport,
/// against an HTTPS server on 127.0.0.1 presenting the demo's own certificate.
enum SecurityScenarios {
    /// The demo's CA and the `localhost` certificate it signed (valid until 2126). Made for this demo
    /// only, key included: never trust them anywhere else.
    static let caPEM = """
        -----BEGIN CERTIFICATE-----
        MIIB4TCCAYegAwIBAgIUX2d50+K74k3mqq/efhY2h6k0B+wwCgYIKoZIzj0EAwIw
        PTE7MDkGA1UEAwwyU3dpdGNoYm9hcmQgZGVtbyBDQSAobm90IGZvciB1c2Ugb3V0
        c2lkZSB0aGUgZGVtbykwIBcNMjYxMjA1MDc1NTUxWhgPMjEyNjExMTEwNzU1NTFa
        MD0xOzA5BgNVBAMMMlN3aXRjaGJvYXJkIGRlbW8gQ0EgKG5vdCBmb3IgdXNlIG91
        dHNpZGUgdGhlIGRlbW8pMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEcOsuXieq
        O5reJyBWsKlNI2nes5TUmvonYrAxDG0t7aTfV/OUqfmA5UKIbn1QXsM7VaqXcRF6
        H3qgX0BM+gKssKNjMGEwHQYDVR0OBBYEFFFRdKoinAI7GZvP1ksjhIDGjHFKMB8G
        A1UdIwQYMBaAFFFRdKoinAI7GZvP1ksjhIDGjHFKMA8GA1UdEwEB/wQFMAMBAf8w
        DgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMCA0gAMEUCIB5u+6lU01fjLrCfm7Ra
        mm06OdTBQqVpjDpW1WovjzMYAiEAk3dLJldnUfWGSrGuCl8FR64iUb633K+991iZ
        UHVkvdY=
        -----END CERTIFICATE-----

        """
    static let serverPEM = """
        -----BEGIN CERTIFICATE-----
        MIIBwDCCAWagAwIBAgIBBzAKBggqhkjOPQQDAjA9MTswOQYDVQQDDDJTd2l0Y2hi
        b2FyZCBkZW1vIENBIChub3QgZm9yIHVzZSBvdXRzaWRlIHRoZSBkZW1vKTAgFw0y
        NjEyMDUwNzU1NTFaGA8yMTI2MTExMTA3NTU1MVowFDESMBAGA1UEAwwJbG9jYWxo
        b3N0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEybhuVTaoi4WzzCaFbYmQnt/I
        XdhFV1RBi/w1Q02oo644kKQoRD5yZo5W8IZxCgRniVaurFB9KG0IuX+NK3sqRKN+
        MHwwGgYDVR0RBBMwEYIJbG9jYWxob3N0hwR/AAABMBMGA1UdJQQMMAoGCCsGAQUF
        BwMBMAkGA1UdEwQCMAAwHQYDVR0OBBYEFNKFLJ61+ssl6cOgsbTYlAkM/f8rMB8G
        A1UdIwQYMBaAFFFRdKoinAI7GZvP1ksjhIDGjHFKMAoGCCqGSM49BAMCA0gAMEUC
        IQCma1dkiOXa7rwwPFTvmh8oHZWR0H2uiKaHhHJOwEGyXgIgOtXhw/IBKlvJHHd/
        W0aMQSA6XnidS6o/xoCtRiTvpUc=
        -----END CERTIFICATE-----

        """
    static let serverKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgWFU+jFECN/IRuvcY
        FKJJY9MFW1ACws2nFZ+bH7I6AmChRANCAATJuG5VNqiLhbPMJoVtiZCe38hd2EVX
        VEGL/DVDTaijrjiQpChEPnJmjlbwhnEKBGeJVq6sUH0obQi5f40reypE
        -----END PRIVATE KEY-----

        """
    /// The server key's pin, as `openssl x509 -pubkey -noout | openssl pkey -pubin -outform DER |
    /// openssl dgst -sha256 -binary | base64` computed it.
    static let serverPin = "CbuHjlcfsuL+J8UbtoleXntG6pL0T5ebv7JMS4jOJs0="

    struct Hello: Request {
        let url: URL
        var path: String { url.absoluteString }
    }

    /// An HTTPS server for the demo: the package's test server script (`Tests/Interop`), Python's ssl.
    final class HTTPSServer: Sendable {
        let port: Int
        private let process: ChildProcess
        private let folder: URL

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-demo-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let cert = folder.appendingPathComponent("server.pem"), key = folder.appendingPathComponent("server.key")
            try SecurityScenarios.serverPEM.write(to: cert, atomically: true, encoding: .utf8)
            try SecurityScenarios.serverKeyPEM.write(to: key, atomically: true, encoding: .utf8)
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Tests/Interop/tls_trust_server.py")
            process = try ChildProcess("/usr/bin/env", ["python3", script.path, #"[{"cert": "\#(cert.path)", "key": "\#(key.path)"}]"#], input: .pipe)
            guard let ports = try? JSONSerialization.jsonObject(with: Data(process.readLine().utf8)) as? [Int], let port = ports.first else {
                process.terminate()
                process.wait()
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the HTTPS server did not start (python3 needed)"])
            }
            self.port = port
        }

        func stop() {
            try? process.input?.close()
            process.terminate()
            process.wait()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "Security policy: a pinned server is trusted, a wrong pin is refused (libcurl transport)") { transcript in
            #if canImport(Glibc)
            guard (try? TransportFactory.curlIfAvailable()) != nil else {
                transcript.say("  the libcurl transport is not available here: the trust policy needs it (see the Security article)")
                return
            }
            let server: HTTPSServer
            do {
                server = try HTTPSServer()
            } catch {
                transcript.say("  skipped: \(error.localizedDescription)")
                return
            }
            defer { server.stop() }
            do {
                let ca = try TrustCertificate(pem: Data(caPEM.utf8))
                let pin = try TrustCertificate(pem: Data(serverPEM.utf8)).publicKeyPin
                transcript.say("  the server's key pin: \(pin) (openssl says sha256//\(serverPin))")
                transcript.check(pin.base64 == serverPin, "the package computes the pin openssl computes")
                let url = URL(string: "https://localhost:\(server.port)/hello")!
                func client(_ policy: TrustPolicy, transport: TransportFactory = .curl) -> Dispatcher {
                    Dispatcher(
                        configuration: Configuration {
                            $0.transport = transport
                            $0.serverTrust["localhost"] = policy
                            $0.callbackQueue = .immediate
                        })
                }
                let pinned = await client(.pinnedPublicKeys([pin], anchors: .only([ca]))).sendAndWait(Hello(url: url))
                transcript.say("  pinned to the server's key: \((try? pinned.get()).map { "\($0.statusCode) \($0.json)" } ?? "\(pinned)")")
                transcript.check((try? pinned.get())?.json["ok"] == true, "the pinned request succeeds")

                let wrongPin = try PublicKeyPin(sha256Base64: Data(repeating: 7, count: 32).base64EncodedString())
                let refused = await client(.pinnedPublicKeys([wrongPin], anchors: .only([ca]))).sendAndWait(Hello(url: url))
                transcript.say("  pinned to another key: \(refused.failure.map { "\($0)" } ?? "succeeded!")")
                if case .serverTrustFailed(let failure)? = refused.failure {
                    transcript.check(failure.check == .publicKeyPin, "a wrong pin is refused, and the error says which check failed")
                } else {
                    transcript.check(false, "a wrong pin is refused with serverTrustFailed")
                }

                let system = await client(.system).sendAndWait(Hello(url: url))
                transcript.say("  with the system's CAs alone: \(system.failure.map { "\($0)" } ?? "succeeded!")")
                transcript.check(system.failure != nil, "the demo's private CA is not trusted without a policy")

                let onURLSession = await client(.pinnedPublicKeys([pin], anchors: .only([ca])), transport: .urlSession).sendAndWait(Hello(url: url))
                transcript.say("  the same policy on the URLSession transport: \(onURLSession.failure.map { "\($0)" } ?? "succeeded!")")
                if case .unsupportedTrustPolicy? = onURLSession.failure {
                    transcript.check(true, "the URLSession transport refuses a policy it can't apply, sending nothing")
                } else {
                    transcript.check(false, "the URLSession transport refuses a policy it can't apply")
                }
            } catch {
                transcript.check(false, "the demo's certificates parse: \(error)")
            }
            #else
            transcript.say("  the trust policy needs the libcurl transport (Linux): see the Security article")
            #endif
        }
    ]
}
