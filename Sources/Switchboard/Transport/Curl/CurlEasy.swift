#if canImport(Glibc)
/// One libcurl easy handle of the loop, kept from hop to hop (libcurl's advice: reuse them), with
/// its error buffer and what its options were last set for.
///
/// Loop thread only (a transfer uses it only inside the loop's calls).
final class CurlEasy {
    /// What the handle's options were last set for.
    enum Options {
        /// New or reset: libcurl's defaults.
        case defaults
        /// A GET without a body: the options every hop sets, plus `CURLOPT_HTTPGET`. The next plain
        /// GET on this handle sets only what differs (URL, headers, the transfer, two timeouts'
        /// worth of numbers); anything else resets the handle first.
        case plainGet
        /// Anything else (a body, another method, progress callbacks): reset before the next hop.
        case other
    }

    let handle: CurlLibrary.Handle
    /// `CURLOPT_ERRORBUFFER`: libcurl's message for a failed hop (`CURL_ERROR_SIZE` bytes).
    let errorBuffer: UnsafeMutablePointer<CChar>
    var options = Options.defaults
    /// The trust policy's options set on the handle since its last reset (`nil`: libcurl's defaults).
    var trust: CurlTLSOptions?

    init(_ handle: CurlLibrary.Handle) {
        self.handle = handle
        errorBuffer = .allocate(capacity: CurlConstant.errorSize)
        errorBuffer.initialize(repeating: 0, count: CurlConstant.errorSize)
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// libcurl's message for the hop that just ended on this handle ("" when it gave none).
    var errorMessage: String { String(cString: errorBuffer) }
}

/// A libcurl header list (`struct curl_slist { char *data; struct curl_slist *next; }`) built in one
/// allocation: the nodes first, then their lines, each ended by a NUL. `curl_slist_append` makes two
/// allocations per line (the node and a copy of the line); libcurl only reads the list
/// (`CURLOPT_HTTPHEADER` keeps the pointer, does not copy or free it), so it may be ours.
///
/// Owned by one hop: freed with ``free()`` once the hop has left the multi handle.
struct CurlHeaderList {
    /// One header line.
    enum Line {
        /// `Name: value`.
        case field(String, String)
        /// `Name;`: libcurl sends the field with an empty value (`Name:` would remove it).
        case empty(String)
        /// A whole line as given (`Expect:`, a default).
        case line(String)

        fileprivate var length: Int {
            switch self {
            case .field(let name, let value): name.utf8.count + 2 + value.utf8.count
            case .empty(let name): name.utf8.count + 1
            case .line(let line): line.utf8.count
            }
        }
    }

    private(set) var pointer: UnsafeMutableRawPointer?

    private static let nodeSize = 2 * MemoryLayout<UnsafeRawPointer>.stride

    init(_ lines: [Line]) {
        guard !lines.isEmpty else { return }
        var bytes = 0
        for line in lines { bytes += line.length + 1 }
        let nodes = lines.count * Self.nodeSize
        let block = UnsafeMutableRawPointer.allocate(byteCount: nodes + bytes, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        var text = block + nodes
        for (index, line) in lines.enumerated() {
            let node = block + index * Self.nodeSize
            let next: UnsafeMutableRawPointer? = index + 1 < lines.count ? node + Self.nodeSize : nil
            node.storeBytes(of: text, as: UnsafeMutableRawPointer.self)
            node.storeBytes(of: next, toByteOffset: MemoryLayout<UnsafeRawPointer>.stride, as: UnsafeMutableRawPointer?.self)
            switch line {
            case .field(let name, let value):
                Self.copy(name, to: &text)
                Self.copy(": ", to: &text)
                Self.copy(value, to: &text)
            case .empty(let name):
                Self.copy(name, to: &text)
                Self.copy(";", to: &text)
            case .line(let line):
                Self.copy(line, to: &text)
            }
            text.storeBytes(of: 0, as: UInt8.self)
            text += 1
        }
        pointer = block
    }

    private static func copy(_ string: String, to text: inout UnsafeMutableRawPointer) {
        var string = string
        string.withUTF8 { utf8 in
            if let base = utf8.baseAddress { text.copyMemory(from: base, byteCount: utf8.count) }
            text += utf8.count
        }
    }

    /// Frees the list (libcurl must no longer hold it: the hop has left the multi handle).
    mutating func free() {
        pointer?.deallocate()
        pointer = nil
    }
}
#endif
