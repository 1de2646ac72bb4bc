import Foundation
import LoopbackServer
#if canImport(Glibc)
import Glibc
#endif

/// nginx serving `GET /small` (the loopback server's 40-byte JSON, byte for byte) on an ephemeral port,
/// for `SWITCHBOARD_BENCH_SERVER=nginx switchboard-bench e2e`: a server fast enough that the clients,
/// not the server, bound the requests per second (the loopback server, in Swift, tops out near the
/// `curl --parallel` row). Needs `nginx` on the PATH (Debian: `apt-get install nginx-light`).
///
/// With a certificate it also serves `/small` and `/connection` (which says which connection carried
/// it, nginx's `$connection`) over TLS on two more ports: one offering HTTP/2 by ALPN, one HTTP/1.1
/// only (the `http2` scenario).
final class NginxServer {
    /// A shell that runs nginx and ends it when the bench ends, however the bench ends (a killed or
    /// timed-out run leaves no nginx behind).
    private var process: ChildProcess?
    private let directory: URL
    let baseURL: URL
    /// `https://localhost:<port>` offering HTTP/2, and one serving HTTP/1.1 only (with a certificate).
    private(set) var http2URL: URL?
    private(set) var http1URL: URL?

    init(certificate: (certificate: URL, key: URL)? = nil) throws {
        guard let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first(where: FileManager.default.isExecutableFile) else {
            throw BenchError("SWITCHBOARD_BENCH_SERVER=nginx, but nginx is not installed")
        }
        let port = try Self.freePort()
        let tlsPorts = certificate == nil ? [] : [try Self.freePort(), try Self.freePort()]
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-nginx-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = """
            daemon off;
            worker_processes 1;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log off;
                client_body_temp_path \(directory.path);
                proxy_temp_path \(directory.path);
                fastcgi_temp_path \(directory.path);
                uwsgi_temp_path \(directory.path);
                scgi_temp_path \(directory.path);
                keepalive_requests 1000000;
                server {
                    listen 127.0.0.1:\(port);
                    location = /small { default_type application/json; return 200 '{"ok":true,"id":1,"name":"switchboard"}'; }
                }
            \(certificate.map { pair in
                tlsPorts.enumerated().map { index, tlsPort in
                    """
                    server {
                        listen 127.0.0.1:\(tlsPort) ssl\(index == 0 ? " http2" : "");
                        ssl_certificate \(pair.certificate.path);
                        ssl_certificate_key \(pair.key.path);
                        http2_max_concurrent_streams 256;
                        location = /small { default_type application/json; return 200 '{"ok":true,"id":1,"name":"switchboard"}'; }
                        location = /connection { default_type application/json; return 200 '{"ok":true,"connection":$connection}'; }
                    }
                    """
                }.joined(separator: "\n")
            } ?? "")
            }
            """
        let file = directory.appendingPathComponent("nginx.conf")
        try config.write(to: file, atomically: true, encoding: .utf8)
        // The watchdog: nginx in the background, ended when the shell is told to stop (TERM) or when
        // the bench's process is gone (checked twice a second).
        let watchdog = """
            '\(nginx)' -c '\(file.path)' -p '\(directory.path)' -e '\(directory.path)/error.log' &
            server=$!
            trap 'kill $server 2>/dev/null; wait $server; rm -rf "\(directory.path)"; exit 0' TERM INT
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.5; done
            kill $server 2>/dev/null
            wait $server
            rm -rf '\(directory.path)'
            """
        process = try ChildProcess("/bin/sh", ["-c", watchdog], output: .null)
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
        if tlsPorts.count == 2 {
            http2URL = URL(string: "https://localhost:\(tlsPorts[0])")!
            http1URL = URL(string: "https://localhost:\(tlsPorts[1])")!
        }
        // Ready when its port takes a connection (a plain socket: no proxy variable can get in the way).
        for _ in 0..<100 {
            if Self.accepts(port) { return }
            usleep(50_000)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        stop()  // never left running, nor its folder
        throw BenchError("nginx did not start: \(log.suffix(300))")
    }

    /// Whether something on 127.0.0.1 accepts a connection at `port`.
    static func accepts(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// A port nobody listens on now (the system's choice).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw BenchError("no free port") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func stop() {
        if let process {
            process.terminate()
            if !process.wait(upTo: 10) { process.kill() }
            process.wait()
        }
        process = nil
        try? FileManager.default.removeItem(at: directory)
    }
}
