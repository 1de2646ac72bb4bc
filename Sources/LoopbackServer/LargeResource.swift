import Foundation

/// A large file served from the loopback server without holding it in memory: deterministic bytes,
/// `ETag` and `Last-Modified`, single `Range` requests (`206`, or `416` past the end) honouring
/// `If-Range`, and ways to misbehave: change it (a new version, new bytes), cut a response off at a
/// byte, ignore ranges.
///
/// ```swift
/// let file = LargeResource(length: 8 << 20)
/// server.serve(file, at: "/files/big.bin")
/// file.abort(atOffset: 1 << 20)     // the next response closes after the first MiB
/// file.version = 2                  // the file changed: new bytes, new validators
/// ```
public final class LargeResource: Sendable {
    private struct State {
        var version: Int
        var abortAt: Int?
        var ignoresRanges = false
        var sendsETag = true
        var sendsLastModified = true
        var pause: TimeInterval = 0
        var holdAt: Int?
        var requests: [(range: String?, ifRange: String?)] = []
        var patterns: [Int: [UInt8]] = [:]
    }

    /// The file's size in bytes.
    public let length: Int
    private let state: Locked<State>
    /// The bytes repeat with this period (a prime, so a misplaced offset shows).
    static let period = 65_521

    /// A resource of `length` bytes at `version`.
    public init(length: Int, version: Int = 1) {
        self.length = length
        state = Locked(State(version: version))
    }

    /// The version: changing it changes the bytes, the `ETag` and the `Last-Modified`.
    public var version: Int {
        get { state.withLock { $0.version } }
        set { state.withLock { $0.version = newValue } }
    }

    /// Whether `Range` is ignored (every answer a `200` with the whole file).
    public var ignoresRanges: Bool {
        get { state.withLock { $0.ignoresRanges } }
        set { state.withLock { $0.ignoresRanges = newValue } }
    }

    /// A pause before each piece of 256 KiB is sent: a slow server, for pausing a download midway.
    public var pausePerPiece: TimeInterval {
        get { state.withLock { $0.pause } }
        set { state.withLock { $0.pause = newValue } }
    }

    /// Which validators are sent: `ETag`, `Last-Modified`, both (default) or neither.
    public func sendValidators(etag: Bool, lastModified: Bool) {
        state.withLock {
            $0.sendsETag = etag; $0.sendsLastModified = lastModified
        }
    }

    /// The next response that reaches byte `offset` of the file closes the connection there (once).
    public func abort(atOffset offset: Int) {
        state.withLock { $0.abortAt = offset }
    }

    /// Responses stop before byte `offset` of the file (at a 256 KiB piece boundary) until
    /// ``release()``, for at most 60 s: a transfer caught midway, whatever the load on the machine.
    public func hold(atOffset offset: Int) {
        state.withLock { $0.holdAt = offset }
    }

    /// Lets held responses go on.
    public func release() {
        state.withLock { $0.holdAt = nil }
    }

    /// The `Range` and `If-Range` headers of every request so far.
    public var requests: [(range: String?, ifRange: String?)] { state.withLock { $0.requests } }

    /// The current `ETag`.
    public var etag: String { "\"v\(version)-\(length)\"" }

    /// The current `Last-Modified`.
    public var lastModified: String { Self.httpDate(version) }

    /// The bytes in `range` of the current version.
    public func bytes(_ range: Range<Int>) -> Data {
        let pattern = self.pattern(version)
        var data = Data(count: range.count)
        data.withUnsafeMutableBytes { Self.fill(pattern, from: range.lowerBound, into: $0) }
        return data
    }

    /// The checksum (``Checksum``) of the whole current version, computed piece by piece.
    public func checksum() -> String {
        var checksum = Checksum()
        let pattern = self.pattern(version)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0
        while offset < length {
            let count = min(buffer.count, length - offset)
            buffer.withUnsafeMutableBytes { raw in
                let piece = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                Self.fill(pattern, from: offset, into: piece)
                checksum.update(UnsafeRawBufferPointer(piece))
            }
            offset += count
        }
        return checksum.hex
    }

    /// The answer to `request`.
    public func respond(to request: ServerRequest) -> ServerResponse {
        let rangeHeader = request.header("Range"), ifRange = request.header("If-Range")
        let (version, abortAt, ignoresRanges, sendsETag, sendsLastModified, pause) = state.withLock { state in
            state.requests.append((rangeHeader, ifRange))
            return (state.version, state.abortAt, state.ignoresRanges, state.sendsETag, state.sendsLastModified, state.pause)
        }
        let etag = "\"v\(version)-\(length)\"", modified = Self.httpDate(version)
        var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
        if sendsETag { headers.append(("ETag", etag)) }
        if sendsLastModified { headers.append(("Last-Modified", modified)) }
        var start = 0, end = length  // the bytes sent: start..<end
        var status = 200
        if let rangeHeader, !ignoresRanges, ifRange == nil || ifRange == etag || ifRange == modified {
            guard let range = Self.parse(rangeHeader, length: length) else {
                return ServerResponse(status: 416, headers: headers + [("Content-Range", "bytes */\(length)")])
            }
            (start, end, status) = (range.lowerBound, range.upperBound, 206)
            headers.append(("Content-Range", "bytes \(start)-\(end - 1)/\(length)"))
        }
        var abortAfter: Int?
        if let abortAt, abortAt >= start, abortAt < end, request.method != "HEAD" {
            abortAfter = abortAt - start
            state.withLock { $0.abortAt = nil }
        }
        let pattern = self.pattern(version), first = start
        return ServerResponse(
            status: status, headers: headers,
            body: .generated(length: end - start, abortAfter: abortAfter) { offset, buffer in
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
                self.waitWhileHeld(before: first + offset + buffer.count)
                Self.fill(pattern, from: first + offset, into: buffer)
            })
    }

    private func waitWhileHeld(before end: Int) {
        let deadline = Date().addingTimeInterval(60)
        while let hold = state.withLock({ $0.holdAt }), end > hold, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n` (one range) within `length`; `nil` when unsatisfiable.
    static func parse(_ header: String, length: Int) -> Range<Int>? {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return nil }
        let spec = value.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard spec.count == 2 else { return nil }
        if spec[0].isEmpty {
            guard let suffix = Int(spec[1]), suffix > 0 else { return nil }
            return max(0, length - suffix)..<length
        }
        guard let first = Int(spec[0]), first < length else { return nil }
        let last = spec[1].isEmpty ? length - 1 : min(length - 1, Int(spec[1]) ?? -1)
        guard last >= first else { return nil }
        return first..<(last + 1)
    }

    private func pattern(_ version: Int) -> [UInt8] {
        if let cached = state.withLock({ $0.patterns[version] }) { return cached }
        var generator = UInt64(truncatingIfNeeded: version) &* 0x9E37_79B9_7F4A_7C15 | 1
        let pattern = (0..<Self.period).map { _ -> UInt8 in
            generator ^= generator << 13; generator ^= generator >> 7; generator ^= generator << 17
            return UInt8(truncatingIfNeeded: generator >> 24)
        }
        state.withLock { $0.patterns[version] = pattern }
        return pattern
    }

    private static func fill(_ pattern: [UInt8], from offset: Int, into buffer: UnsafeMutableRawBufferPointer) {
        pattern.withUnsafeBytes { source in
            var written = 0
            var position = offset % period
            while written < buffer.count {
                let count = min(period - position, buffer.count - written)
                (buffer.baseAddress! + written).copyMemory(from: source.baseAddress! + position, byteCount: count)
                written += count
                position = 0
            }
        }
    }

    private static func httpDate(_ version: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: 1_700_000_000 + Double(version) * 86_400))
    }
}

extension LoopbackServer {
    /// Serves `resource` at `path` (GET and HEAD).
    public func serve(_ resource: LargeResource, at path: String) {
        route("GET", path) { resource.respond(to: $0) }
    }
}
