import Foundation

/// A large file served from the loopback server without holding it in memory: deterministic bytes,
/// `ETag`, `Last-Modified` and `Date`, single `Range` requests (`206`, or `416` past the end) honouring
/// `If-Range`, and ways to misbehave: change it (a new version, new bytes), cut a response off at a
/// byte, ignore ranges or `If-Range`, answer a range with a wrong `206` (``partialAnswer``), date the
/// file now.
///
/// ```swift
/// let file = LargeResource(length: 8 << 20)
/// server.serve(file, at: "/files/big.bin")
/// file.abort(atOffset: 1 << 20)     // the next response closes after the first MiB
/// file.version = 2                  // the file changed: new bytes, new validators
/// file.partialAnswer = .otherETag   // a 206 names another version
/// ```
public final class LargeResource: Sendable {
    /// How a `206` misbehaves.
    public enum PartialAnswer: Sendable {
        /// Neither `ETag` nor `Last-Modified`.
        case withoutValidators
        /// `Content-Range: bytes a-b/*`: the complete length unknown.
        case unknownLength
        /// The bytes from half the offset asked for, labelled as such.
        case startingElsewhere
        /// A `Content-Range` naming a complete length one byte longer than the file.
        case otherCompleteLength
        /// An `ETag` other than the file's.
        case otherETag
    }

    /// The headers of one request, as received.
    public struct Received: Sendable {
        /// `Range`.
        public var range: String?
        /// `If-Range`.
        public var ifRange: String?
        /// Every `Accept-Encoding` field, joined with `, ` (`nil` without one).
        public var acceptEncoding: String?
    }

    private struct State {
        var version: Int
        var abortAt: Int?
        var ignoresRanges = false
        var ignoresIfRange = false
        var rangesEverything = false
        var partialAnswer: PartialAnswer?
        var sendsETag = true
        var sendsLastModified = true
        var lastModifiedIsNow = false
        var contentDisposition: String?
        var pause: TimeInterval = 0
        var holdAt: Int?
        var requests: [Received] = []
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

    /// Whether `If-Range` is ignored: a range is answered with a `206` even after the file changed.
    public var ignoresIfRange: Bool {
        get { state.withLock { $0.ignoresIfRange } }
        set { state.withLock { $0.ignoresIfRange = newValue } }
    }

    /// Whether a request without `Range` is answered as one for `bytes=0-` (a `206`).
    public var rangesEverything: Bool {
        get { state.withLock { $0.rangesEverything } }
        set { state.withLock { $0.rangesEverything = newValue } }
    }

    /// How every `206` misbehaves from now on (`nil`: it doesn't).
    public var partialAnswer: PartialAnswer? {
        get { state.withLock { $0.partialAnswer } }
        set { state.withLock { $0.partialAnswer = newValue } }
    }

    /// Whether `Last-Modified` is the response's `Date` (a file changed this second: not a validator
    /// to resume with).
    public var lastModifiedIsNow: Bool {
        get { state.withLock { $0.lastModifiedIsNow } }
        set { state.withLock { $0.lastModifiedIsNow = newValue } }
    }

    /// A `Content-Disposition` sent with every answer (`nil`: none).
    public var contentDisposition: String? {
        get { state.withLock { $0.contentDisposition } }
        set { state.withLock { $0.contentDisposition = newValue } }
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

    /// Responses stop before byte `offset` of the file (exactly there) until ``release()``, for at
    /// most 60 s: a transfer caught midway, whatever the load on the machine.
    public func hold(atOffset offset: Int) {
        state.withLock { $0.holdAt = offset }
    }

    /// Lets held responses go on.
    public func release() {
        state.withLock { $0.holdAt = nil }
    }

    /// The `Range`, `If-Range` and `Accept-Encoding` headers of every request so far.
    public var requests: [Received] { state.withLock { $0.requests } }

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
        let encodings = request.headers.filter { $0.name.lowercased() == "accept-encoding" }.map(\.value)
        let received = Received(range: request.header("Range"), ifRange: request.header("If-Range"), acceptEncoding: encodings.isEmpty ? nil : encodings.joined(separator: ", "))
        let current = state.withLock { state in
            state.requests.append(received)
            return state
        }
        let now = Date()
        let etag = "\"v\(current.version)-\(length)\"", modified = current.lastModifiedIsNow ? Self.httpDate(now) : Self.httpDate(current.version)
        var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes"), ("Date", Self.httpDate(now))]
        if let disposition = current.contentDisposition { headers.append(("Content-Disposition", disposition)) }
        var validators: [(String, String)] = []
        if current.sendsETag { validators.append(("ETag", etag)) }
        if current.sendsLastModified { validators.append(("Last-Modified", modified)) }
        var start = 0, end = length  // the bytes sent: start..<end
        var status = 200
        let ifRange = received.ifRange
        if let rangeHeader = received.range ?? (current.rangesEverything ? "bytes=0-" : nil), !current.ignoresRanges,
            ifRange == nil || ifRange == etag || ifRange == modified || current.ignoresIfRange
        {
            guard let range = Self.parse(rangeHeader, length: length) else {
                return ServerResponse(status: 416, headers: headers + validators + [("Content-Range", "bytes */\(length)")])
            }
            (start, end, status) = (range.lowerBound, range.upperBound, 206)
            var total = "\(length)"
            switch current.partialAnswer {
            case .withoutValidators: validators = []
            case .unknownLength: total = "*"
            case .startingElsewhere: start /= 2
            case .otherCompleteLength: total = "\(length + 1)"
            case .otherETag: validators = validators.map { $0.0 == "ETag" ? ("ETag", "\"other\"") : $0 }
            case nil: break
            }
            headers.append(("Content-Range", "bytes \(start)-\(end - 1)/\(total)"))
        }
        var abortAfter: Int?
        if let abortAt = current.abortAt, abortAt >= start, abortAt < end, request.method != "HEAD" {
            abortAfter = abortAt - start
            state.withLock { $0.abortAt = nil }
        }
        let pattern = self.pattern(current.version), first = start, pause = current.pause
        return ServerResponse(
            status: status, headers: headers + validators,
            body: .generated(length: end - start, abortAfter: abortAfter, pieceEnd: current.holdAt.map { $0 - start }) { offset, buffer in
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
        httpDate(Date(timeIntervalSince1970: 1_700_000_000 + Double(version) * 86_400))
    }

    private static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

extension LoopbackServer {
    /// Serves `resource` at `path` (GET and HEAD).
    public func serve(_ resource: LargeResource, at path: String) {
        route("GET", path) { resource.respond(to: $0) }
    }
}
