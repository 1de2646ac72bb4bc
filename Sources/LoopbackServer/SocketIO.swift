import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Thin wrappers over the BSD socket calls the server needs, hiding the Linux/Darwin differences (the
/// Darwin branches are written for, not built or tested in this project's CI).
enum SocketIO {
    #if canImport(Darwin)
    static let streamType = SOCK_STREAM
    static let sendFlags: Int32 = 0
    #else
    static let streamType = Int32(SOCK_STREAM.rawValue)
    static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif

    /// Creates a listening TCP socket on 127.0.0.1:`port` (0 = ephemeral) and returns it with the bound port.
    static func makeListener(port: UInt16, backlog: Int32 = 512) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { throw LoopbackServerError.socket(call: "socket", errno: errno) }
        var success = false
        defer { if !success { close(fd) } }

        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        disableSigPipe(fd)

        var address = loopbackAddress(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw LoopbackServerError.socket(call: "bind", errno: errno) }
        guard listen(fd, backlog) == 0 else { throw LoopbackServerError.socket(call: "listen", errno: errno) }

        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw LoopbackServerError.socket(call: "getsockname", errno: errno) }
        success = true
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    /// `sockaddr_in` for 127.0.0.1:`port`.
    static func loopbackAddress(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    /// Accepts one connection; returns -1 with `errno` set on failure.
    static func acceptConnection(_ listener: Int32) -> Int32 {
        let fd = accept(listener, nil, nil)
        if fd >= 0 {
            setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            disableSigPipe(fd)
        }
        return fd
    }

    /// Sets an integer socket option, ignoring failure (all our options are best effort).
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// On Darwin, stops a peer's close from raising SIGPIPE (Linux uses `MSG_NOSIGNAL` on each send).
    static func disableSigPipe(_ fd: Int32) {
        #if canImport(Darwin)
        setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
    }

    /// Sends every byte of `bytes`; returns `false` if the peer went away.
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var pointer = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let sent = send(fd, pointer, remaining, sendFlags)
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            if sent == 0 { return false }
            pointer += sent
            remaining -= sent
        }
        return true
    }

    /// Sends every byte of `bytes`; returns `false` if the peer went away.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { sendAll(fd, $0) }
    }

    /// Sends every byte of `data`; returns `false` if the peer went away.
    static func sendAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { sendAll(fd, $0) }
    }

    /// Receives up to `capacity` bytes into `buffer`; returns the count, 0 at end of stream, -1 on error.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            return count
        }
    }

    /// Makes the next `close` of `fd` send a TCP reset instead of a graceful end.
    static func resetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// Whether the peer has closed `fd` (a non-blocking peek reads end of file or fails).
    static func peerClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count == 0 { return true }
        return count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR
    }

    /// Wakes any thread blocked in `accept`/`recv`/`send` on `fd` without closing it.
    static func shutdownBoth(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Closes gracefully: stops sending (the peer sees EOF after all data), drains what the peer still
    /// sends for at most `linger` seconds so the kernel does not answer with a reset, then closes.
    static func gracefulClose(_ fd: Int32, linger: TimeInterval = 0.25) {
        _ = shutdown(fd, Int32(SHUT_WR))
        let deadline = Date().addingTimeInterval(linger)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { break }
            var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollFD, 1, Int32(max(1, remaining * 1000)))
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { break }
            let count = scratch.withUnsafeMutableBytes { receive(fd, into: $0) }
            if count <= 0 { break }
        }
        close(fd)
    }
}

/// Errors thrown by ``LoopbackServer``.
public enum LoopbackServerError: Error, CustomStringConvertible {
    /// A socket call failed; `errno` is the C error number.
    case socket(call: String, errno: Int32)
    /// `start()` was called on a server that was already started (or already stopped).
    case alreadyStarted

    /// A readable description, including the C error text.
    public var description: String {
        switch self {
        case let .socket(call, code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .alreadyStarted: "the loopback server was already started"
        }
    }
}
