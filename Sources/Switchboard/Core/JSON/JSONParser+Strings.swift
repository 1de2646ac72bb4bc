/// String scanning for `JSONParser`.
extension JSONParser {
    /// Parses a string literal; `position` is at the opening quote and ends after the closing quote.
    ///
    /// Strings without escapes are built once straight from the input bytes.
    mutating func parseString() throws(JSONParseError) -> String {
        let start = position + 1
        var index = start
        var highBits: UInt8 = 0
        while index < count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                position = index + 1
                let bytes = UnsafeBufferPointer(start: base + start, count: index - start)
                if highBits < 0x80 {
                    return String(decoding: bytes, as: UTF8.self)
                }
                guard let string = UTF8Validation.string(bytes) else {
                    throw JSONParseError(.invalidUTF8, at: start + UTF8Validation.firstInvalidOffset(in: bytes))
                }
                return string
            }
            if byte == UInt8(ascii: "\\") {
                return try parseEscapedString(start: start, firstEscape: index)
            }
            if byte < 0x20 {
                throw JSONParseError(.controlCharacterInString, at: index)
            }
            highBits |= byte
            index += 1
        }
        throw JSONParseError(.unexpectedEndOfInput, at: count)
    }

    /// Slow path for strings with escapes: decodes into `scratch`, then validates once.
    private mutating func parseEscapedString(start: Int, firstEscape: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: base + start, count: firstEscape - start))
        var index = firstEscape
        while index < count {
            let byte = base[index]
            switch byte {
            case UInt8(ascii: "\""):
                position = index + 1
                guard let string = scratch.withUnsafeBufferPointer(UTF8Validation.string) else {
                    // Escapes only ever produce valid UTF-8, so the culprit is in the raw input bytes.
                    let raw = UnsafeBufferPointer(start: base + start, count: index - start)
                    throw JSONParseError(.invalidUTF8, at: start + UTF8Validation.firstInvalidOffset(in: raw))
                }
                return string
            case UInt8(ascii: "\\"):
                index = try decodeEscape(at: index)
            case 0..<0x20:
                throw JSONParseError(.controlCharacterInString, at: index)
            default:
                scratch.append(byte)
                index += 1
            }
        }
        throw JSONParseError(.unexpectedEndOfInput, at: count)
    }

    /// Decodes the escape whose backslash is at `index` into `scratch`; returns the offset after it.
    private mutating func decodeEscape(at index: Int) throws(JSONParseError) -> Int {
        guard index + 1 < count else {
            throw JSONParseError(.unexpectedEndOfInput, at: count)
        }
        let simple: UInt8
        switch base[index + 1] {
        case UInt8(ascii: "\""): simple = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): simple = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): simple = UInt8(ascii: "/")
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            return try decodeUnicodeEscape(at: index)
        default:
            throw JSONParseError(.invalidEscape, at: index)
        }
        scratch.append(simple)
        return index + 2
    }

    /// Decodes `\uXXXX` (and a following low surrogate escape when needed) at `index`.
    private mutating func decodeUnicodeEscape(at index: Int) throws(JSONParseError) -> Int {
        let first = try readHex4(at: index)
        var scalarValue = UInt32(first)
        var next = index + 6
        if (0xD800...0xDBFF).contains(first) {
            // A high surrogate must be followed directly by a `\u` low surrogate escape.
            for (offset, expected) in [(next, UInt8(ascii: "\\")), (next + 1, UInt8(ascii: "u"))] {
                guard offset < count else {
                    throw JSONParseError(.unexpectedEndOfInput, at: count)
                }
                guard base[offset] == expected else {
                    throw JSONParseError(.unpairedSurrogate, at: index)
                }
            }
            let second = try readHex4(at: next)
            guard (0xDC00...0xDFFF).contains(second) else {
                throw JSONParseError(.unpairedSurrogate, at: index)
            }
            scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
            next += 6
        } else if (0xDC00...0xDFFF).contains(first) {
            throw JSONParseError(.unpairedSurrogate, at: index)
        }
        guard let scalar = Unicode.Scalar(scalarValue) else {
            throw JSONParseError(.unpairedSurrogate, at: index)
        }
        for unit in UTF8.encode(scalar) ?? UTF8.EncodedScalar() {
            scratch.append(unit)
        }
        return next
    }

    /// Reads the four hex digits of the `\u` escape whose backslash is at `index`.
    private func readHex4(at index: Int) throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for offset in (index + 2)..<(index + 6) {
            guard offset < count else {
                throw JSONParseError(.unexpectedEndOfInput, at: count)
            }
            let byte = base[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(.invalidUnicodeEscape, at: index)
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }
}
