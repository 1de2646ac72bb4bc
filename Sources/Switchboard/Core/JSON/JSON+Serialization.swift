import Foundation

/// Serialization to UTF-8 JSON text (hand-written; does not use `JSONSerialization`).
extension JSON: CustomStringConvertible {
    /// Compact JSON text with sorted keys, e.g. `{"a":[1,2.5,null]}`.
    public var description: String {
        var writer = JSONWriter(sortedKeys: true, prettyPrinted: false)
        writer.write(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Serializes the value to UTF-8 JSON.
    ///
    /// Strings escape `"` `\` and all control characters (`\n` `\r` `\t` `\b` `\f`, others as `\u00XX`);
    /// `/` and non-ASCII characters are written literally. Integers are exact; doubles use the shortest
    /// text that round-trips (`1.0`, `1e-05`), and non-finite doubles are written as `null`.
    ///
    /// - Parameters:
    ///   - sortedKeys: Write object members in ascending key order (deterministic output).
    ///   - prettyPrinted: Indent nested values by two spaces and put each member on its own line.
    /// - Returns: The UTF-8 encoded JSON text.
    ///
    /// ```swift
    /// let body: JSON = ["name": "Ada", "tags": ["x"]]
    /// let data = body.serialized(sortedKeys: true)   // {"name":"Ada","tags":["x"]}
    /// ```
    public func serialized(sortedKeys: Bool = false, prettyPrinted: Bool = false) -> Data {
        var writer = JSONWriter(sortedKeys: sortedKeys, prettyPrinted: prettyPrinted)
        writer.write(self)
        return Data(writer.bytes)
    }
}

/// Appends JSON text for a `JSON` value to a byte buffer.
struct JSONWriter {
    /// The output written so far.
    private(set) var bytes: [UInt8] = []
    /// Whether object members are written in key order.
    let sortedKeys: Bool
    /// Whether to write newlines and indentation.
    let prettyPrinted: Bool
    /// Current nesting level (pretty printing only).
    private var indent = 0

    /// Creates a writer with the given options.
    init(sortedKeys: Bool, prettyPrinted: Bool) {
        self.sortedKeys = sortedKeys
        self.prettyPrinted = prettyPrinted
        bytes.reserveCapacity(256)
    }

    /// Appends `value`.
    mutating func write(_ value: JSON) {
        switch value {
        case .null:
            append("null")
        case .bool(let flag):
            append(flag ? "true" : "false")
        case .integer(let number):
            writeInteger(number)
        case .double(let number):
            if number.isFinite {
                append(number.description)
            } else {
                append("null")
            }
        case .string(let text):
            writeString(text)
        case .array(let elements):
            writeArray(elements)
        case .object(let members):
            writeObject(members)
        }
    }

    /// Appends the UTF-8 bytes of a string verbatim.
    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends a decimal integer without allocating.
    private mutating func writeInteger(_ number: Int64) {
        if number == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        if number < 0 {
            bytes.append(UInt8(ascii: "-"))
        }
        var magnitude = number.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, enough for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            while magnitude > 0 {
                scratch[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            var index = count - 1
            while index >= 0 {
                bytes.append(scratch[index])
                index -= 1
            }
        }
    }

    /// Appends a quoted, escaped string.
    private mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var copy = text
        copy.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if runStart < index {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                }
                runStart = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    // Control characters 0x00...0x1F: \u00XX with lowercase hex digits.
                    let low = byte & 0x0F
                    bytes.append(UInt8(ascii: "u"))
                    bytes.append(UInt8(ascii: "0"))
                    bytes.append(UInt8(ascii: "0"))
                    bytes.append(UInt8(ascii: "0") + (byte >> 4))
                    bytes.append(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
                }
            }
            if runStart < utf8.count {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends an array, one element per line when pretty printing.
    private mutating func writeArray(_ elements: [JSON]) {
        bytes.append(UInt8(ascii: "["))
        guard !elements.isEmpty else {
            bytes.append(UInt8(ascii: "]"))
            return
        }
        indent += 1
        for (position, element) in elements.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            newline()
            write(element)
        }
        indent -= 1
        newline()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Appends an object, optionally in key order.
    private mutating func writeObject(_ members: [String: JSON]) {
        bytes.append(UInt8(ascii: "{"))
        guard !members.isEmpty else {
            bytes.append(UInt8(ascii: "}"))
            return
        }
        indent += 1
        var first = true
        if sortedKeys {
            for key in members.keys.sorted() {
                writeMember(key, members[key] ?? .null, first: &first)
            }
        } else {
            for (key, value) in members {
                writeMember(key, value, first: &first)
            }
        }
        indent -= 1
        newline()
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends one `"key":value` pair with its leading separator.
    private mutating func writeMember(_ key: String, _ value: JSON, first: inout Bool) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        newline()
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
        if prettyPrinted { bytes.append(UInt8(ascii: " ")) }
        write(value)
    }

    /// Starts a new indented line when pretty printing.
    private mutating func newline() {
        guard prettyPrinted else { return }
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }
}
