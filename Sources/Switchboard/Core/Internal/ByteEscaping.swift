extension String {
    /// The text with each ASCII byte that `replacement` names replaced by what it returns, everything
    /// else as it is. Byte by byte, not through Foundation's `replacingOccurrences`: that one compares
    /// grapheme clusters and misses a quote or a line break followed by a combining mark.
    func replacingASCII(_ replacement: (UInt8) -> String?) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count + 8)
        for byte in utf8 {
            if byte < 0x80, let replaced = replacement(byte) { bytes.append(contentsOf: replaced.utf8) } else { bytes.append(byte) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
