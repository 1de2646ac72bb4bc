import Foundation

/// Buffered reading from a connected socket: lines for the request head, exact byte counts for bodies.
struct ConnectionReader {
    /// Why reading stopped early.
    enum Failure: Error {
        /// The peer closed (or the socket failed) before the expected bytes arrived.
        case closed
        /// A line was longer than allowed.
        case lineTooLong
    }

    let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 65_536)

    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(65_536)
    }

    /// Bytes received but not consumed yet.
    var bufferedCount: Int { buffer.count - start }

    /// Receives more bytes; returns `false` at end of stream or on error.
    mutating func fill() -> Bool {
        let count = scratch.withUnsafeMutableBytes { SocketIO.receive(fd, into: $0) }
        guard count > 0 else { return false }
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 32_768 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: scratch[0..<count])
        return true
    }

    /// Reads one line ending in LF (a preceding CR is dropped). Returns `nil` on a clean end of stream
    /// before any byte of the line.
    mutating func readLine(limit: Int) throws(Failure) -> [UInt8]? {
        var scanned = 0  // bytes after `start` already known to hold no LF (fill() may move `start`)
        while true {
            if let newline = buffer[(start + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = Array(buffer[start..<end])
                start = newline + 1
                return line
            }
            if buffer.count - start > limit { throw .lineTooLong }
            scanned = buffer.count - start
            if !fill() {
                if bufferedCount == 0 { return nil }
                throw .closed
            }
        }
    }

    /// Reads exactly `count` bytes.
    mutating func read(exactly count: Int) throws(Failure) -> [UInt8] {
        while bufferedCount < count {
            if !fill() { throw .closed }
        }
        let bytes = Array(buffer[start..<(start + count)])
        start += count
        return bytes
    }

    /// Hands exactly `count` bytes to `sink` piece by piece, never holding them all.
    mutating func read(exactly count: Int, into sink: (UnsafeRawBufferPointer) -> Void) throws(Failure) {
        var remaining = count
        while remaining > 0 {
            if bufferedCount == 0 && !fill() { throw .closed }
            let take = min(remaining, bufferedCount)
            buffer.withUnsafeBytes { raw in sink(UnsafeRawBufferPointer(rebasing: raw[start..<(start + take)])) }
            start += take
            remaining -= take
        }
    }

    /// Appends exactly `count` bytes to `data`, without holding them all in the buffer at once.
    mutating func read(exactly count: Int, appendingTo data: inout Data) throws(Failure) {
        var remaining = count
        while remaining > 0 {
            if bufferedCount == 0 && !fill() { throw .closed }
            let take = min(remaining, bufferedCount)
            buffer.withUnsafeBytes { raw in
                let base = raw.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self)
                data.append(base, count: take)
            }
            start += take
            remaining -= take
        }
    }
}
