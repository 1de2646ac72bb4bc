import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// nginx serving `GET /small` (the loopback server's 40-byte JSON, byte for byte) on an ephemeral port,
/// for `SWITCHBOARD_BENCH_SERVER=nginx switchboard-bench e2e`: a server fast enough that the clients,
/// not the server, bound the requests per second (the loopback server, in Swift, tops out near the
/// `curl --parallel` row). Needs `nginx` on the PATH (Debian: `apt-get install nginx-light`).
final class NginxServer {
    private let process = Process()
    private let directory: URL
    let baseURL: URL

    init() throws {
        guard let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first(where: FileManager.default.isExecutableFile) else {
            throw BenchError("SWITCHBOARD_BENCH_SERVER=nginx, but nginx is not installed")
        }
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        close(socket)
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
            }
            """
        let file = directory.appendingPathComponent("nginx.conf")
        try config.write(to: file, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-c", file.path, "-p", directory.path, "-e", "\(directory.path)/error.log"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
        // Ready when it answers.
        for _ in 0..<100 {
            if (try? Data(contentsOf: baseURL.appendingPathComponent("small"))) != nil { return }
            usleep(50_000)
        }
        throw BenchError("nginx did not start (see \(directory.path)/error.log)")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
