import Dispatch
import Foundation
import LoopbackServer
import Switchboard

/// Certificates made with `openssl` when the tests run (nothing from the machine's trust store, nothing
/// written outside a temporary folder), and HTTPS servers on 127.0.0.1 that present them
/// (`Tests/Interop/tls_trust_server.py`, Python's `ssl`).
enum TLSLab {
    /// Why the lab can't run here (no `openssl` or `python3`), or `nil` when it can.
    static let unavailable: String? = {
        for tool in ["openssl", "python3"] where (try? shell("command -v \(tool)")) == nil {
            return "the trust-policy tests need `\(tool)` (Debian: apt-get install openssl python3)"
        }
        return nil
    }()

    /// The certificates, made once per test process by `openssl`, on a thread of its own (``offPool(_:)``):
    /// never on Swift's concurrency pool, whose threads (as many as cores) every test's `await`s and the
    /// library's tasks share.
    static func materials() async throws -> Materials {
        try await offPool { try made.get() }
    }

    private static let made: Result<Materials, any Error> = Result {
        let materials = try Materials()
        // A static is never deinitialised: the folder (keys included) goes when the process exits.
        folderToRemove = materials.folder.path
        atexit { if let path = TLSLab.folderToRemove { try? FileManager.default.removeItem(atPath: path) } }
        return materials
    }

    /// The materials' folder, removed at exit.
    nonisolated(unsafe) private static var folderToRemove: String?

    /// One certificate (PEM) and its key (PEM), as files.
    struct Pair: Sendable {
        let certificate: URL
        let key: URL
        var certificatePEM: Data { (try? Data(contentsOf: certificate)) ?? Data() }
        var keyPEM: Data { (try? Data(contentsOf: key)) ?? Data() }
        func trustCertificate() throws -> TrustCertificate { try TrustCertificate(pem: certificatePEM) }
    }

    /// Every certificate the trust tests use: three unrelated CAs and what each signed.
    final class Materials: Sendable {
        let folder: URL
        /// The CA the tests' servers mostly use, and another one.
        let caA: Pair, caB: Pair
        /// The CA that signs client certificates.
        let clientCA: Pair
        /// `localhost` and `127.0.0.1`, signed by A; a second key for the same names, signed by A.
        let server: Pair, serverOtherKey: Pair
        /// `localhost` and `127.0.0.1`, signed by B.
        let serverB: Pair
        /// Signed by A, expired in 2020.
        let expired: Pair
        /// Signed by A, for `other.example` only.
        let wrongHost: Pair
        /// A client certificate signed by the client CA, and one signed by B.
        let client: Pair, strangerClient: Pair
        /// `client`'s key, encrypted the traditional way (`Proc-Type: 4,ENCRYPTED`) with `secret`.
        let encryptedClientKey: URL
        /// The pins of `server` and `serverOtherKey`, as `openssl` computes them (not this package).
        let serverPin: String, otherKeyPin: String
        /// Two CAs for a system store the tests make (one in its bundle file, one in its CA folder),
        /// and a server certificate signed by each.
        let systemBundleCA: Pair, systemFolderCA: Pair, systemBundleServer: Pair, systemFolderServer: Pair

        init() throws {
            let base = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-tls-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
            folder = base
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            let dir = base.path
            func ca(_ name: String) throws -> Pair {
                try TLSLab.shell(
                    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3 -subj '/CN=Switchboard test \(name)' "
                        + "-addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign' "
                        + "-keyout '\(dir)/\(name).key' -out '\(dir)/\(name).pem'")
                return Pair(certificate: base.appendingPathComponent("\(name).pem"), key: base.appendingPathComponent("\(name).key"))
            }
            /// A leaf for `names` (subjectAltName entries) signed by `issuer`, valid now or in 2020.
            func leaf(_ name: String, by issuer: Pair, names: String, usage: String = "serverAuth", expired: Bool = false) throws -> Pair {
                try TLSLab.shell(
                    "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=\(name)' -keyout '\(dir)/\(name).key' -out '\(dir)/\(name).csr'")
                try "subjectAltName=\(names)\nextendedKeyUsage=\(usage)\nbasicConstraints=CA:FALSE\n".write(
                    toFile: "\(dir)/\(name).ext", atomically: true, encoding: .utf8)
                if expired {
                    // `openssl x509` can't back-date; `openssl ca` can, with a throwaway database.
                    try "".write(toFile: "\(dir)/index.txt", atomically: true, encoding: .utf8)
                    try "01\n".write(toFile: "\(dir)/serial", atomically: true, encoding: .utf8)
                    try """
                    [ca]
                    default_ca = lab
                    [lab]
                    database = \(dir)/index.txt
                    new_certs_dir = \(dir)
                    serial = \(dir)/serial
                    default_md = sha256
                    policy = any
                    unique_subject = no
                    [any]
                    commonName = supplied
                    """.write(toFile: "\(dir)/ca.cnf", atomically: true, encoding: .utf8)
                    try TLSLab.shell(
                        "openssl ca -batch -config '\(dir)/ca.cnf' -cert '\(issuer.certificate.path)' -keyfile '\(issuer.key.path)' "
                            + "-startdate 20200101000000Z -enddate 20200102000000Z -extfile '\(dir)/\(name).ext' -notext -in '\(dir)/\(name).csr' -out '\(dir)/\(name).pem'")
                } else {
                    try TLSLab.shell(
                        "openssl x509 -req -days 2 -in '\(dir)/\(name).csr' -CA '\(issuer.certificate.path)' -CAkey '\(issuer.key.path)' "
                            + "-set_serial \(Int.random(in: 1000...1_000_000_000)) -extfile '\(dir)/\(name).ext' -out '\(dir)/\(name).pem'")
                }
                return Pair(certificate: base.appendingPathComponent("\(name).pem"), key: base.appendingPathComponent("\(name).key"))
            }
            caA = try ca("caA")
            caB = try ca("caB")
            clientCA = try ca("clientCA")
            let local = "DNS:localhost,IP:127.0.0.1"
            server = try leaf("server", by: caA, names: local)
            serverOtherKey = try leaf("serverOtherKey", by: caA, names: local)
            serverB = try leaf("serverB", by: caB, names: local)
            expired = try leaf("expired", by: caA, names: local, expired: true)
            wrongHost = try leaf("wrongHost", by: caA, names: "DNS:other.example")
            client = try leaf("client", by: clientCA, names: "DNS:client.example", usage: "clientAuth")
            strangerClient = try leaf("strangerClient", by: caB, names: "DNS:client.example", usage: "clientAuth")
            encryptedClientKey = base.appendingPathComponent("client-encrypted.key")
            try TLSLab.shell("openssl ec -in '\(dir)/client.key' -aes128 -passout pass:secret -out '\(encryptedClientKey.path)'")
            func pin(_ pair: Pair) throws -> String {
                try TLSLab.shell(
                    "openssl x509 -in '\(pair.certificate.path)' -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | openssl base64 -A"
                ).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            serverPin = try pin(server)
            otherKeyPin = try pin(serverOtherKey)
            systemBundleCA = try ca("systemBundleCA")
            systemFolderCA = try ca("systemFolderCA")
            systemBundleServer = try leaf("systemBundleServer", by: systemBundleCA, names: local)
            systemFolderServer = try leaf("systemFolderServer", by: systemFolderCA, names: local)
        }

        deinit {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// Why the tests can't make a system CA store of their own here, or `nil` when they can: they
    /// bind-mount a folder over `/etc/ssl/certs` (libcurl's bundle and CA folder on Debian) inside a
    /// mount namespace of the probe's own, which needs root and `unshare`; the machine's store is
    /// never touched.
    static let systemStoreUnavailable: String? = {
        guard getuid() == 0 else { return "making a system CA store of the tests' own needs root (a mount namespace)" }
        guard (try? shell("command -v unshare && test -f /etc/ssl/certs/ca-certificates.crt")) != nil else {
            return "making a system CA store of the tests' own needs unshare and Debian's /etc/ssl/certs"
        }
        guard (try? shell("unshare --mount true")) != nil else {
            return "making a system CA store of the tests' own needs a mount namespace (unshare --mount), which this machine refuses"
        }
        return nil
    }()

    /// Runs a shell command on a thread of its own (``offPool(_:)``); its standard output, or an error.
    @discardableResult
    static func output(of command: String) async throws -> String {
        try await offPool { try shell(command) }
    }

    /// Runs a shell command, blocking the caller (the lab's own set-up); its standard output, or an error.
    @discardableResult
    static func shell(_ command: String) throws -> String {
        let (status, output) = try ChildProcess.run("/bin/sh", ["-c", command])
        guard status == 0 else { throw LabError("`\(command)` failed (\(status))") }
        return output
    }

    struct LabError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// HTTPS servers on 127.0.0.1, one per given certificate, each on its own port; they stop with
/// ``stop()`` or when this process ends (they serve until their standard input closes).
final class TLSServers: Sendable {
    struct Spec: Sendable {
        let pair: TLSLab.Pair
        /// The CA whose client certificates the server requires, or `nil` for none.
        var clientCA: TLSLab.Pair? = nil
        /// TLS 1.2 at most (a refused client certificate is refused inside the handshake, always with
        /// the server's alert; TLS 1.3 refuses it after, and a reset can swallow the alert).
        var tls12 = false
    }

    let ports: [Int]
    private let process: ChildProcess
    private let stopped = Box(false)

    /// Starts the servers on a thread of its own (``offPool(_:)``): Python's start-up is seconds on a
    /// loaded machine, too long to hold one of the concurrency pool's threads.
    static func start(_ specs: [Spec]) async throws -> TLSServers {
        try await offPool { try TLSServers(specs) }
    }

    private init(_ specs: [Spec]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop/tls_trust_server.py")
        let list: [[String: Any]] = specs.map { spec in
            var entry: [String: Any] = ["cert": spec.pair.certificate.path, "key": spec.pair.key.path, "tls12": spec.tls12]
            if let clientCA = spec.clientCA { entry["clientCA"] = clientCA.certificate.path }
            return entry
        }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: list), as: UTF8.self)
        process = try ChildProcess("/usr/bin/env", ["python3", script.path, json], input: .pipe)
        // The first line is the ports (the servers listen before it is printed).
        let line = process.readLine()
        guard let ports = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [Int], ports.count == specs.count else {
            process.terminate()
            process.wait()
            throw TLSLab.LabError("the TLS servers did not start: \(line)")
        }
        self.ports = ports
    }

    /// `https://<host>:<port of server index><path>`.
    func url(_ index: Int, host: String = "localhost", path: String = "/hello") -> URL {
        URL(string: "https://\(host):\(ports[index])\(path)")!
    }

    /// Ends the servers, once (`deinit` asks again while the child is still going down); the process is
    /// reaped on a thread of its own, so a test's `defer` never blocks.
    func stop() {
        let first = stopped.mutate { wasStopped -> Bool in
            defer { wasStopped = true }
            return !wasStopped
        }
        if first { process.stopInBackground() }
    }

    deinit {
        if process.isRunning { stop() }
    }
}

extension ChildProcess {
    /// Closes the child's input, sends it SIGTERM and reaps it on a thread of its own (``onOwnThread(_:)``):
    /// returns at once, for a test's `defer` on a task's thread.
    func stopInBackground() {
        try? input?.close()
        terminate()
        onOwnThread { self.wait() }
    }
}
