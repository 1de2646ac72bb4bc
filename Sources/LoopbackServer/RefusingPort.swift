import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 that refuses every connection for as long as this object lives: a socket bound
/// to it that never listens, so no other server (another test's, in parallel) can take the port
/// meanwhile, as it could one that was merely closed.
public final class RefusingPort: Sendable {
    /// The port number.
    public let port: UInt16
    private let fd: Int32

    /// Binds a free port.
    public init() throws {
        let fd = socket(AF_INET, SocketIO.streamType, 0)
        guard fd >= 0 else { throw LoopbackServerError.socket(call: "socket", errno: errno) }
        var address = SocketIO.loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            let code = errno
            close(fd)
            throw LoopbackServerError.socket(call: bound == 0 ? "getsockname" : "bind", errno: code)
        }
        self.fd = fd
        port = UInt16(bigEndian: actual.sin_port)
    }

    deinit { close(fd) }
}
