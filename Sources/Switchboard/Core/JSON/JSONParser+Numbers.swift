/// Number scanning for `JSONParser`.
extension JSONParser {
    /// Exact powers of ten representable as `Double` (10^0 ... 10^22).
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// Parses a number per the RFC 8259 grammar; `position` is at `-` or a digit.
    ///
    /// Integers that fit `Int64` become `.integer`. Other numbers become `.double`, computed exactly
    /// (Clinger's fast path) when the digits fit 2^53 and the power of ten is at most 22, otherwise by the
    /// standard library's correctly rounded `Double(String)`.
    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = position
        var index = position
        let negative = base[index] == UInt8(ascii: "-")
        if negative { index += 1 }

        var mantissa: UInt64 = 0
        var digitCount = 0
        // Integer part: "0" or a non-zero digit followed by digits.
        guard index < count else { throw JSONParseError(.unexpectedEndOfInput, at: count) }
        let first = base[index]
        if first == UInt8(ascii: "0") {
            index += 1
            digitCount = 1
            if index < count && JSONParser.isDigit(base[index]) {
                throw JSONParseError(.invalidNumber, at: start)
            }
        } else if JSONParser.isDigit(first) {
            while index < count && JSONParser.isDigit(base[index]) {
                if digitCount < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(base[index] &- UInt8(ascii: "0"))
                }
                digitCount += 1
                index += 1
            }
        } else {
            throw JSONParseError(.invalidNumber, at: start)
        }

        var isInteger = true
        var fractionDigits = 0
        if index < count && base[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let fractionStart = index
            while index < count && JSONParser.isDigit(base[index]) {
                if digitCount < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(base[index] &- UInt8(ascii: "0"))
                    fractionDigits += 1
                }
                digitCount += 1
                index += 1
            }
            try requireDigits(from: fractionStart, to: index)
        }

        var exponent = 0
        if index < count && (base[index] == UInt8(ascii: "e") || base[index] == UInt8(ascii: "E")) {
            isInteger = false
            index += 1
            var exponentNegative = false
            if index < count && (base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-")) {
                exponentNegative = base[index] == UInt8(ascii: "-")
                index += 1
            }
            let exponentStart = index
            while index < count && JSONParser.isDigit(base[index]) {
                if exponent < 100_000 {
                    exponent = exponent * 10 + Int(base[index] &- UInt8(ascii: "0"))
                }
                index += 1
            }
            try requireDigits(from: exponentStart, to: index)
            if exponentNegative { exponent = -exponent }
        }
        position = index

        if digitCount <= 19 {
            if isInteger {
                if negative {
                    if mantissa <= UInt64(Int64.max) {
                        return .integer(-Int64(mantissa))
                    }
                    if mantissa == UInt64(Int64.max) + 1 {
                        return .integer(.min)
                    }
                } else if mantissa <= UInt64(Int64.max) {
                    return .integer(Int64(mantissa))
                }
                let magnitude = Double(mantissa)  // correctly rounded
                return .double(negative ? -magnitude : magnitude)
            }
            let decimalExponent = exponent - fractionDigits
            if mantissa <= 1 << 53 && decimalExponent >= -22 && decimalExponent <= 22 {
                // Both operands are exact, so one IEEE multiply/divide gives the correctly rounded result.
                var magnitude = Double(mantissa)
                if decimalExponent < 0 {
                    magnitude /= JSONParser.powersOfTen[-decimalExponent]
                } else {
                    magnitude *= JSONParser.powersOfTen[decimalExponent]
                }
                return .double(negative ? -magnitude : magnitude)
            }
        }
        return .double(try slowDouble(from: start, to: index))
    }

    /// Converts the already validated number text in `start..<end` with the standard library.
    private func slowDouble(from start: Int, to end: Int) throws(JSONParseError) -> Double {
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: end - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(.numberOutOfRange, at: start)
        }
        return value
    }

    /// Fails unless at least one digit was consumed between `start` and `end`.
    @inline(__always)
    private func requireDigits(from start: Int, to end: Int) throws(JSONParseError) {
        guard end > start else {
            if end >= count {
                throw JSONParseError(.unexpectedEndOfInput, at: count)
            }
            throw JSONParseError(.invalidNumber, at: end)
        }
    }

    /// Whether `byte` is an ASCII digit.
    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }
}
