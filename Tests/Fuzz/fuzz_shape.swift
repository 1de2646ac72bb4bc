// Target: JSONShape.mismatch(in:) (Sources/Switchboard/Rules/Validation/JSONShape.swift): the shape
// validator that checks a server's JSON against what a request expects.
// Input: the first byte is the length n of a shape program; the next n bytes build a shape (see
// `ShapeReader`); the rest is JSON text (inputs that don't parse are skipped).
// Checks: no trap; the validator agrees with an independent reference (`conforms`) on match or
// mismatch; a mismatch names a path that exists in the value (or, for a missing key, whose parent
// object lacks that key) and reports what is there; `.any` and the shape inferred from the value
// always match; an optional or nullable shape accepts null.
import Foundation

/// Builds a shape from bytes, depth-limited. Keys come from a small alphabet so JSON text from the
/// corpus (and the dictionary) hits them.
private struct ShapeReader {
    static let keys = ["a", "b", "id", "name", "x y", "é", "\"q\"", "", "items", "0"]
    var bytes: ArraySlice<UInt8>

    mutating func next() -> UInt8? { bytes.popFirst() }

    mutating func shape(depth: Int = 0) -> JSONShape {
        guard depth < 8, let op = next() else { return .any }
        switch op % 10 {
        case 0: return .any
        case 1: return .string
        case 2: return .integer
        case 3: return .number
        case 4: return .bool
        case 5:
            var fields: [String: JSONShape] = [:]
            for _ in 0..<Int((next() ?? 0) % 4) {
                fields[Self.keys[Int((next() ?? 0) % UInt8(Self.keys.count))]] = shape(depth: depth + 1)
            }
            return .object(fields)
        case 6: return .array(shape(depth: depth + 1))
        case 7: return .optional(shape(depth: depth + 1))
        case 8: return .nullable(shape(depth: depth + 1))
        default: return .oneOf((0..<Int((next() ?? 0) % 3)).map { _ in shape(depth: depth + 1) })
        }
    }
}

/// The reference: whether `value` conforms to `shape`, written from the documentation, not the code.
private func conforms(_ value: JSON, to shape: JSONShape) -> Bool {
    switch shape {
    case .any: return true
    case .string: if case .string = value { return true } else { return false }
    case .integer: if case .integer = value { return true } else { return false }
    case .number:
        switch value {
        case .integer, .double: return true
        default: return false
        }
    case .bool: if case .bool = value { return true } else { return false }
    case .optional(let inner), .nullable(let inner):
        if case .null = value { return true }
        return conforms(value, to: inner)
    case .oneOf(let shapes): return shapes.contains { conforms(value, to: $0) }
    case .array(let element):
        guard case .array(let items) = value else { return false }
        return items.allSatisfy { conforms($0, to: element) }
    case .object(let fields):
        guard case .object(let members) = value else { return false }
        return fields.allSatisfy { key, fieldShape in
            guard let member = members[key] else {
                if case .optional = fieldShape { return true }
                return false
            }
            return conforms(member, to: fieldShape)
        }
    }
}

/// Every path in `value` with the value there, named as mismatches name them.
private func paths(of value: JSON, at path: String = "$", into table: inout [String: JSON]) {
    table[path] = value
    switch value {
    case .array(let items):
        for (index, item) in items.enumerated() { paths(of: item, at: "\(path)[\(index)]", into: &table) }
    case .object(let members):
        for (key, member) in members { paths(of: member, at: JSONShapeMismatch.path(path, key: key), into: &table) }
    default:
        break
    }
}

/// A shape every value of this form matches.
private func inferred(from value: JSON) -> JSONShape {
    switch value {
    case .null: return .nullable(.string)
    case .bool: return .bool
    case .integer: return .integer
    case .double: return .number
    case .string: return .string
    case .array(let items): return .array(.oneOf(items.map(inferred)))
    case .object(let members): return .object(members.mapValues(inferred))
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let buffer = UnsafeBufferPointer(start: data, count: size)
    let programLength = min(Int(buffer[0]), size - 1)
    var reader = ShapeReader(bytes: ArraySlice(buffer[1..<(1 + programLength)]))
    let shape = reader.shape()
    guard let value = try? JSON.parse(Data(buffer[(1 + programLength)...])) else { return 0 }

    let mismatch = shape.mismatch(in: value)
    expect(
        "reference", (mismatch == nil) == conforms(value, to: shape),
        "validator says \(mismatch.map { "\($0)" } ?? "match"), reference says \(conforms(value, to: shape) ? "match" : "mismatch"); shape \(shape), value \(value)")
    if let mismatch {
        _ = mismatch.description
        expect("expectation", !mismatch.expected.isEmpty, "empty expectation in \(mismatch)")
        var table: [String: JSON] = [:]
        paths(of: value, into: &table)
        if mismatch.found == "nothing (missing key)" {
            let located = table.contains { path, parent in
                guard case .object(let members) = parent else { return false }
                return ShapeReader.keys.contains { key in JSONShapeMismatch.path(path, key: key) == mismatch.path && members[key] == nil }
            }
            expect("path", located, "missing key at \(mismatch.path) is not a key absent from an object of \(value)")
        } else {
            expect("path", table[mismatch.path] != nil, "\(mismatch.path) is not a path of \(value)")
            if let there = table[mismatch.path] {
                expect("found", there.kindName == mismatch.found, "\(mismatch): the value there is \(there.kindName)")
            }
        }
    }
    expect("any", JSONShape.any.mismatch(in: value) == nil, ".any rejected \(value)")
    let own = inferred(from: value)
    expect("inferred", own.mismatch(in: value) == nil, "the value's own shape \(own) rejected \(value): \(own.mismatch(in: value)!)")
    expect(
        "nullable", JSONShape.nullable(shape).mismatch(in: .null) == nil && JSONShape.optional(shape).mismatch(in: .null) == nil,
        "nullable/optional rejected null")
    return 0
}
