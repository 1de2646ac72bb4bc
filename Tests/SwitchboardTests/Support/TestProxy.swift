import Foundation
import LoopbackServer
import Switchboard

/// The tests' HTTP proxy on 127.0.0.1 (`Tests/Interop/test_proxy.py`): forwards absolute-form
/// requests, tunnels `CONNECT`, asks for Basic credentials when given some, and says what it saw.
final class TestProxy: Sendable {
    struct Seen: Equatable {
        let method: String
        let target: String
        let proxyAuthorization: String?
    }

    let port: Int
    private let process: ChildProcess
    private let stopped = Box(false)

    /// A proxy, started on a thread of its own (``offPool(_:)``); with `credentials`, it answers 407 to
    /// requests without them.
    static func start(credentials: Credentials? = nil) async throws -> TestProxy {
        try await offPool { try TestProxy(credentials: credentials) }
    }

    private init(credentials: Credentials?) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop/test_proxy.py")
        process = try ChildProcess("/usr/bin/env", ["python3", script.path] + (credentials.map { ["\($0.user):\($0.password)"] } ?? []), input: .pipe)
        guard let port = Int(process.readLine()) else {
            process.terminate()
            process.wait()
            throw TLSLab.LabError("the test proxy did not start")
        }
        self.port = port
    }

    /// `HTTPProxy` for this proxy.
    func setting(credentials: Credentials? = nil, bypass: [String] = []) -> ProxySetting {
        .http(HTTPProxy(host: "127.0.0.1", port: port, credentials: credentials, bypass: bypass))
    }

    /// What the proxy saw, oldest first (asked of the proxy itself, straight).
    func seen() async throws -> [Seen] {
        let direct = Dispatcher(
            configuration: Configuration {
                $0.transport = .curl; $0.proxy = .none; $0.callbackQueue = .immediate; $0.cache = nil
            })
        let response = try await direct.response(for: Get("http://127.0.0.1:\(port)/__seen"))
        return response.json.array?.map {
            Seen(method: $0["method"].string ?? "", target: $0["target"].string ?? "", proxyAuthorization: $0["proxyAuthorization"].string)
        } ?? []
    }

    /// Ends the proxy, once (`deinit` asks again while the child is still going down); the process is
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
