/// A strict RFC 8259 parser over raw UTF-8 bytes.
///
/// Iterative (an explicit container stack instead of recursion), so nesting depth is bounded by
/// `JSON.maximumDepth` and never by the thread's stack size. Finished elements wait on a flat value
/// stack and are moved into their array or dictionary once the container closes, so dictionaries are
/// created with their exact capacity.
struct JSONParser {
    /// One open array or object.
    private struct Frame {
        /// `true` for `{`, `false` for `[`.
        var isObject: Bool
        /// Index in `values` of this container's first element.
        var valueStart: Int
        /// Index in `keys` of this object's first key.
        var keyStart: Int
    }

    /// Start of the input.
    let base: UnsafePointer<UInt8>
    /// Number of input bytes.
    let count: Int
    /// Offset of the next unread byte.
    var position = 0
    /// Elements of all open containers, innermost last.
    private var values: [JSON] = []
    /// Keys of all open objects, innermost last.
    private var keys: [String] = []
    /// Open containers, innermost last.
    private var frames: [Frame] = []
    /// Reusable buffer for strings that contain escapes.
    var scratch: [UInt8] = []

    /// Creates a parser over `count` bytes at `base`.
    init(base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }

    /// Parses one value followed only by whitespace (after an optional UTF-8 BOM).
    mutating func parseDocument() throws(JSONParseError) -> JSON {
        if count >= 3 && base[0] == 0xEF && base[1] == 0xBB && base[2] == 0xBF {
            position = 3
        }
        let value = try parseValue()
        skipWhitespace()
        guard position == count else {
            throw JSONParseError(.trailingCharacters, at: position)
        }
        return value
    }

    /// Advances past JSON whitespace (space, tab, LF, CR).
    @inline(__always)
    mutating func skipWhitespace() {
        while position < count {
            let byte = base[position]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    /// Returns the next non-whitespace byte without consuming it.
    @inline(__always)
    private mutating func peekSignificant() throws(JSONParseError) -> UInt8 {
        skipWhitespace()
        guard position < count else {
            throw JSONParseError(.unexpectedEndOfInput, at: position)
        }
        return base[position]
    }

    /// Parses an object key and the `:` after it; `position` is at the opening quote.
    @inline(__always)
    private mutating func parseKey() throws(JSONParseError) {
        let byte = try peekSignificant()
        guard byte == UInt8(ascii: "\"") else {
            throw JSONParseError(.unexpectedCharacter(byte), at: position)
        }
        keys.append(try parseString())
        let colon = try peekSignificant()
        guard colon == UInt8(ascii: ":") else {
            throw JSONParseError(.unexpectedCharacter(colon), at: position)
        }
        position += 1
    }

    /// Opens a container, enforcing the depth limit.
    @inline(__always)
    private mutating func push(isObject: Bool) throws(JSONParseError) {
        guard frames.count < JSON.maximumDepth else {
            throw JSONParseError(.nestingTooDeep, at: position)
        }
        if frames.capacity == 0 {
            // The first container: room for a small document's stacks at once, instead of regrowing each
            // stack from one element (seven allocations for a three-member object, one each now).
            frames.reserveCapacity(8)
            values.reserveCapacity(16)
            keys.reserveCapacity(16)
        }
        frames.append(Frame(isObject: isObject, valueStart: values.count, keyStart: keys.count))
        position += 1
    }

    /// Closes the innermost container and returns it as a value.
    @inline(__always)
    private mutating func pop() -> JSON {
        let frame = frames.removeLast()
        position += 1
        let elementCount = values.count - frame.valueStart
        if frame.isObject {
            var object = [String: JSON](minimumCapacity: elementCount)
            var keyIndex = frame.keyStart
            for valueIndex in frame.valueStart..<values.count {
                object[keys[keyIndex]] = values[valueIndex]
                keyIndex += 1
            }
            keys.removeLast(elementCount)
            values.removeLast(elementCount)
            return .object(object)
        }
        let array = Array(values[frame.valueStart...])
        values.removeLast(elementCount)
        return .array(array)
    }

    /// Parses one complete value (scalar or container) starting at the next significant byte.
    private mutating func parseValue() throws(JSONParseError) -> JSON {
        while true {
            // Parse the start of a value: either a scalar (done) or a container opening.
            var value: JSON
            let byte = try peekSignificant()
            switch byte {
            case UInt8(ascii: "\""):
                value = .string(try parseString())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try parseNumber()
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            case UInt8(ascii: "["):
                try push(isObject: false)
                if try peekSignificant() == UInt8(ascii: "]") {
                    value = pop()
                } else {
                    continue
                }
            case UInt8(ascii: "{"):
                try push(isObject: true)
                if try peekSignificant() == UInt8(ascii: "}") {
                    value = pop()
                } else {
                    try parseKey()
                    continue
                }
            default:
                throw JSONParseError(.unexpectedCharacter(byte), at: position)
            }

            // A value is complete: attach it to the open container, closing containers as they end.
            while true {
                guard let frame = frames.last else { return value }
                values.append(value)
                let separator = try peekSignificant()
                if separator == UInt8(ascii: ",") {
                    position += 1
                    if frame.isObject {
                        try parseKey()
                    }
                    break
                }
                let closer = frame.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                guard separator == closer else {
                    throw JSONParseError(.unexpectedCharacter(separator), at: position)
                }
                value = pop()
            }
        }
    }

    /// Consumes `literal` (`true`, `false` or `null`) exactly.
    @inline(__always)
    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let length = literal.utf8CodeUnitCount
        let expected = literal.utf8Start
        for index in 0..<length {
            guard position < count else {
                throw JSONParseError(.unexpectedEndOfInput, at: position)
            }
            guard base[position] == expected[index] else {
                throw JSONParseError(.unexpectedCharacter(base[position]), at: position)
            }
            position += 1
        }
    }
}
