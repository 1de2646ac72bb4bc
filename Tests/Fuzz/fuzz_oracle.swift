// Target: JSON.parse(_: Data) against Foundation's JSONSerialization as the oracle: the same inputs
// accepted and rejected, and the same values (through JSON(foundationObject:)).
// Input: any bytes, parsed by both (JSONSerialization with .fragmentsAllowed, as JSON.parse accepts
// any value at the top).
// Skipped, as documented differences (see Tests/Fuzz/README.md):
// - input in UTF-16 or UTF-32 (a NUL among the first four bytes, or their byte-order marks), which
//   JSONSerialization detects and JSON.parse, for HTTP bodies (RFC 8259 §8.1), does not;
// - nesting deeper than JSON.maximumDepth - 1, where the two limits differ by design;
// Numbers are compared as numbers: integers exactly, doubles within 1e-14 relative, because
// JSONSerialization misrounds long mantissas by a few units in the last place (e.g.
// 12345678901234526874180, or a 71-digit -9.22337203e70), and gives some integers that fit Int64 as
// a Double; an integer and a double are the same when they are that close. JSONSerialization also
// drops some U+FEFF from inside strings; strings are compared without them when they differ. It
// accepts a comma before `}` or `]`; without it, JSON.parse must read the same value (both may hold in one input). It reads a number
// beyond Double's range (1e309) as infinity, where JSON.parse refuses it (numberOutOfRange), as
// Apple's Foundation does: tolerated when the input holds such a number. JSON.parse's own doubles are checked exactly
// instead: every number token in the input, parsed alone, must equal the standard library's correctly
// rounded Double(String) (or Int64(String) for an integer).
import Foundation

private enum Verdict: CustomStringConvertible {
    case accepted(JSON)
    case rejected(String)

    var description: String {
        switch self {
        case .accepted(let value): "accepted \(value)"
        case .rejected(let reason): "rejected (\(reason))"
        }
    }
}

/// The deepest nesting of arrays and objects, outside strings.
private func depth(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    var deepest = 0, current = 0, inString = false, escaped = false
    for byte in bytes {
        if inString {
            if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
            continue
        }
        switch byte {
        case 0x22: inString = true
        case 0x5B, 0x7B: current += 1; deepest = max(deepest, current)
        case 0x5D, 0x7D: current -= 1
        default: break
        }
    }
    return deepest
}

/// The input without each comma (outside strings) that only whitespace separates from a `}` or `]`.
private func withoutTrailingCommas(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
    var output: [UInt8] = []
    output.reserveCapacity(bytes.count)
    var inString = false, escaped = false
    var pendingComma: Int?  // where in `output` an unconfirmed comma is
    for byte in bytes {
        if inString {
            if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
            output.append(byte)
            continue
        }
        switch byte {
        case 0x20, 0x09, 0x0A, 0x0D:
            output.append(byte)
            continue
        case 0x7D, 0x5D:
            if let comma = pendingComma { output.remove(at: comma) }
        case 0x22:
            inString = true
        default:
            break
        }
        pendingComma = byte == 0x2C ? output.count : nil
        output.append(byte)
    }
    return output
}

/// `text` without U+FEFF: JSONSerialization drops some of them from inside strings (`"\f\u{FEFF} ["`
/// comes back as `"\f ["`); JSON.parse keeps every character of a string.
private func withoutBOMs(_ text: String) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\u{FEFF}" }))
}

/// Same value, numbers compared as numbers: integers exactly, an integer and a double when the double
/// is that integer, doubles bit for bit (-0.0 is not 0.0).
private func equivalent(_ a: JSON, _ b: JSON) -> Bool {
    switch (a, b) {
    case (.integer(let x), .integer(let y)): return x == y
    // JSONSerialization misrounds some long numbers by one unit in the last place (e.g.
    // 12345678901234526874180); JSON.parse rounds correctly, which `fuzz` checks against the
    // standard library for a number alone.
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern || abs(x - y) <= 1e-14 * max(abs(x), abs(y))
    // JSONSerialization gives some integers that fit Int64 as the nearest Double (-9223372036854387904);
    // JSON.parse keeps them exact.
    case (.integer(let x), .double(let y)), (.double(let y), .integer(let x)): return Double(x) == y || abs(Double(x) - y) <= 1e-14 * abs(y)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(equivalent)
    case (.string(let x), .string(let y)): return x == y || withoutBOMs(x) == withoutBOMs(y)
    case (.object(let x), .object(let y)):
        if x.count == y.count, x.allSatisfy({ key, value in y[key].map { equivalent(value, $0) } ?? false }) { return true }
        // JSONSerialization drops some U+FEFF from keys, so keys may differ by them, and two of
        // JSON.parse's keys may be one to JSONSerialization. Members are grouped by their key without
        // U+FEFF: both sides must have the same groups; in each, every JSONSerialization member must be
        // equivalent to one of JSON.parse's, and where no keys merged (the same count), the other way too.
        let parsed = Dictionary(grouping: x, by: { withoutBOMs($0.key) })
        let read = Dictionary(grouping: y, by: { withoutBOMs($0.key) })
        guard Set(parsed.keys) == Set(read.keys) else { return false }
        for (bare, ours) in parsed {
            let theirs = read[bare] ?? []
            guard theirs.count <= ours.count else { return false }
            guard theirs.allSatisfy({ their in ours.contains { equivalent($0.value, their.value) } }) else { return false }
            if theirs.count == ours.count, !ours.allSatisfy({ our in theirs.contains { equivalent(our.value, $0.value) } }) { return false }
        }
        return true
    default: return a == b
    }
}

/// The number tokens of `bytes` outside strings (anything made of digits, signs, dots and exponents).
private func numberTokens(in bytes: UnsafeBufferPointer<UInt8>) -> [String] {
    var tokens: [String] = []
    var inString = false, escaped = false
    var token: [UInt8] = []
    func flush() {
        defer { token.removeAll(keepingCapacity: true) }
        if !token.isEmpty, let text = String(validating: token, as: UTF8.self) { tokens.append(text) }
    }
    for byte in bytes {
        if inString {
            if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
            continue
        }
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"):
            token.append(byte)
        default:
            flush()
            if byte == 0x22 { inString = true }
        }
    }
    flush()
    return tokens
}

/// Every number token of an accepted input (outside strings), parsed alone, is what the standard
/// library reads: Int64(text) for an integer that fits, else the correctly rounded Double(text).
private func checkNumbers(in bytes: UnsafeBufferPointer<UInt8>) {
    for text in numberTokens(in: bytes) {
        switch try? JSON.parse(Data(text.utf8)) {
        case .integer(let value)?:
            expect("integer", Int64(text) == value, "JSON.parse read \(text) as \(value)")
        case .double(let value)?:
            expect(
                "rounding", Double(text)?.bitPattern == value.bitPattern,
                "JSON.parse read \(text) as \(value), the standard library as \(String(describing: Double(text)))")
        default:
            break
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buffer = UnsafeBufferPointer(start: data, count: size)
    // UTF-16/32, by NULs or byte-order marks: JSONSerialization reads them, JSON.parse doesn't.
    if buffer.prefix(4).contains(0) { return 0 }
    if size >= 2 && (buffer[0] == 0xFE && buffer[1] == 0xFF || buffer[0] == 0xFF && buffer[1] == 0xFE) { return 0 }
    if depth(buffer) >= JSON.maximumDepth { return 0 }

    let input = Data(buffer)
    let ours: Verdict
    do {
        ours = .accepted(try JSON.parse(input))
    } catch {
        ours = .rejected("\(error)")
    }
    let theirs: Verdict
    do {
        let object = try JSONSerialization.jsonObject(with: input, options: [.fragmentsAllowed])
        if let value = JSON(foundationObject: object) {
            theirs = .accepted(value)
        } else {
            theirs = .rejected("no JSON form for \(type(of: object))")
        }
    } catch {
        theirs = .rejected("\(error)")
    }
    let text = String(decoding: buffer.prefix(200), as: UTF8.self).debugDescription
    if case .accepted = ours { checkNumbers(in: buffer) }
    switch (ours, theirs) {
    case (.accepted(let mine), .accepted(let oracle)):
        expect("value", equivalent(mine, oracle), "different values for \(text): JSON.parse \(mine), JSONSerialization \(oracle)")
    case (.rejected, .rejected):
        break
    case (.accepted, .rejected):
        expect("accept", false, "JSON.parse \(ours) but JSONSerialization \(theirs): \(text)")
    case (.rejected(let reason), .accepted(let oracle)):
        // JSONSerialization reads 1e309 as infinity; JSON.parse refuses a number no Double holds.
        let beyondDouble = numberTokens(in: buffer).contains(where: { Double($0)?.isInfinite == true })
        if reason.hasPrefix("number out of range"), beyondDouble { return 0 }
        // JSONSerialization accepts a comma before `}` or `]`, which RFC 8259 doesn't: without those
        // commas JSON.parse must read the same value (or refuse a number beyond Double, as above).
        let strict = withoutTrailingCommas(buffer)
        if strict.count < size {
            do throws(JSONParseError) {
                let mine = try JSON.parse(Data(strict))
                expect("value", equivalent(mine, oracle), "different values for \(text) without its trailing commas: JSON.parse \(mine), JSONSerialization \(oracle)")
                return 0
            } catch {
                if "\(error)".hasPrefix("number out of range"), beyondDouble { return 0 }
            }
        }
        expect("reject", false, "JSON.parse \(ours) but JSONSerialization \(theirs): \(text)")
    }
    return 0
}
