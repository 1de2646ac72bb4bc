import Foundation
import Switchboard

/// HTTP/2 against HTTP/1.1: `response(for:)` on the libcurl transport, 64 at a time, against nginx over
/// TLS (a certificate made for the run with openssl, trusted through a trust policy): one port offering
/// HTTP/2 (every send shares one connection), one serving HTTP/1.1 only (up to 64 connections). Needs
/// `nginx` and `openssl` (Debian: `nginx-light`, `openssl`); the bench installs nothing and says what is
/// missing.
enum HTTP2Scenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        guard (try? TransportFactory.curlIfAvailable()) != nil else {
            return ScenarioResult(scenario: "http2", note: "left out: the libcurl transport is not available here", figures: [])
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-tls-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ca: [TrustCertificate]
        do {
            ca = try makeCertificates(in: folder)
        } catch {
            return ScenarioResult(scenario: "http2", note: "left out: \(error) (openssl is needed)", figures: [])
        }
        let nginx: NginxServer
        do {
            nginx = try NginxServer(certificate: (folder.appendingPathComponent("server.pem"), folder.appendingPathComponent("server.key")))
        } catch {
            return ScenarioResult(scenario: "http2", note: "left out: \(error)", figures: [])
        }
        defer { nginx.stop() }
        guard let http2URL = nginx.http2URL, let http1URL = nginx.http1URL else { throw BenchError("nginx has no TLS ports") }
        let concurrency = 64
        let requests = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_REQUESTS"].flatMap { Int($0) } ?? (quick ? 300 : 20_000)
        let rounds = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_ROUNDS"].flatMap { Int($0) } ?? (quick ? 1 : 5)

        func client(_ base: URL) -> Dispatcher {
            Dispatcher(
                configuration: Configuration {
                    $0.baseURL = base
                    $0.transport = .curl
                    $0.serverTrust = ServerTrust(defaultPolicy: .onlyCAs(ca))
                    $0.proxy = .none  // straight to nginx, whatever the environment says
                    $0.maximumConnectionsPerHost = concurrency
                    $0.coalescesDuplicates = false
                    $0.idleTimeout = 30
                    $0.cache = nil
                })
        }
        let overHTTP2 = client(http2URL), overHTTP1 = client(http1URL)
        func variant(_ name: String, _ dispatcher: Dispatcher, expecting version: String) -> E2EScenario.Variant {
            (
                name,
                { counter, _ in
                    while counter.take() {
                        let response = try? await dispatcher.response(for: SmallGet())
                        if response?.json["ok"] != true || response?.httpVersion != version { counter.fail() }
                    }
                }
            )
        }
        let h2 = variant("HTTP/2", overHTTP2, expecting: "HTTP/2"), h1 = variant("HTTP/1.1", overHTTP1, expecting: "HTTP/1.1")
        // Warm up: every connection opened, TLS sessions made.
        for each in [h2, h1] { _ = try await E2EScenario.measure(each, requests: quick ? 64 : 1_000, concurrency: concurrency) }
        var samples: [String: (rate: [Double], cpu: [Double])] = [:]
        for _ in 0..<rounds {
            for each in [h2, h1] {
                let run = try await E2EScenario.measure(each, requests: requests, concurrency: concurrency)
                samples[each.name, default: ([], [])].rate.append(run.rate)
                samples[each.name, default: ([], [])].cpu.append(run.cpu)
            }
        }
        let connections2 = try await connectionsUsed(overHTTP2, concurrency: concurrency)
        let connections1 = try await connectionsUsed(overHTTP1, concurrency: concurrency)
        let two = samples["HTTP/2"] ?? ([], []), one = samples["HTTP/1.1"] ?? ([], [])
        return ScenarioResult(
            scenario: "http2",
            note:
                "\(requests) GET /small per protocol per round, \(concurrency) at a time, \(rounds) rounds after a warm-up, interleaved; nginx over TLS on 127.0.0.1, "
                + "response(for:) on the libcurl transport. Connections: HTTP/2 used \(connections2), HTTP/1.1 used \(connections1) for \(concurrency) sends at once.",
            figures: [
                Figure(name: "HTTP/2, c=\(concurrency)", unit: "req/s", candidate: two.rate, baseline: one.rate, baselineName: "HTTP/1.1"),
                Figure(name: "HTTP/2, c=\(concurrency)", unit: "CPU µs/req", candidate: two.cpu, baseline: one.cpu, baselineName: "HTTP/1.1"),
                Figure(
                    name: "HTTP/2 connections for \(concurrency) sends", unit: "connections", candidate: [Double(connections2)], baseline: [Double(connections1)],
                    baselineName: "HTTP/1.1"),
            ])
    }

    /// How many connections `concurrency` sends at once used (nginx's connection numbers in the answers).
    private static func connectionsUsed(_ dispatcher: Dispatcher, concurrency: Int) async throws -> Int {
        struct Connection: Request { var path: String { "/connection" } }
        let numbers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency { group.addTask { try await dispatcher.response(for: Connection()).json["connection"].int ?? -1 } }
            return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        return numbers.count
    }

    /// A CA and a `localhost` certificate it signed, made with openssl in `folder`; returns the CA.
    private static func makeCertificates(in folder: URL) throws -> [TrustCertificate] {
        let dir = folder.path
        let commands = [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=switchboard-bench CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem",
            ],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost", "-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr"],
            [
                "x509", "-req", "-days", "1", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key", "-set_serial", "1", "-extfile", "\(dir)/ext.cnf",
                "-out", "\(dir)/server.pem",
            ],
        ]
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".write(toFile: "\(dir)/ext.cnf", atomically: true, encoding: .utf8)
        guard let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: FileManager.default.isExecutableFile) else { throw BenchError("no openssl") }
        for arguments in commands {
            let result = try CurlCClient.run(openssl, arguments)
            guard result.status == 0 else { throw BenchError("openssl \(arguments[0]) failed: \(result.output)") }
        }
        return try TrustCertificate.certificates(pem: Data(contentsOf: folder.appendingPathComponent("ca.pem")))
    }
}
