/// The shape a JSON response must have: the Swift form of YTKNetwork's `jsonValidator`.
///
/// Object shapes list required keys (extra keys are ignored); an array shape validates every element
/// against one element shape. Null: a `null` value fails unless the shape is `.nullable` (key required,
/// value may be `null`) or `.optional` (key may be missing too); `.any` accepts `null` but not a
/// missing key.
///
/// ```swift
/// let shape: JSONShape = [
///     "user": ["id": .string, "level": .integer, "nickname": .optional(.string)],
///     "images": [["id": .string, "size": .number]],     // an array of objects
/// ]
/// ```
/// A failure names the path and what was expected: `$.user.id: expected string, found number`.
public indirect enum JSONShape: Sendable, Hashable, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    /// Any value, including `null`, but the key must be present.
    case any
    /// A string.
    case string
    /// An integer (a number without fraction or exponent).
    case integer
    /// Any number.
    case number
    /// `true` or `false`.
    case bool
    /// An object with at least these keys, each of its shape.
    case object([String: JSONShape])
    /// An array whose every element has this shape.
    case array(JSONShape)
    /// The shape, or `null`, or a missing key.
    case optional(JSONShape)
    /// The shape or `null`; the key must be present.
    case nullable(JSONShape)
    /// Any one of these shapes.
    case oneOf([JSONShape])

    /// An object shape: `["id": .string]`.
    public init(dictionaryLiteral elements: (String, JSONShape)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// An array shape from one element shape: `[.string]`, `[["id": .string]]`. Several element shapes
    /// mean any one of them (`[.string, .integer]`); none means any element.
    public init(arrayLiteral elements: JSONShape...) {
        switch elements.count {
        case 0: self = .array(.any)
        case 1: self = .array(elements[0])
        default: self = .array(.oneOf(elements))
        }
    }

    /// Checks `value` against this shape.
    /// - Returns: the first mismatch in document order (object keys sorted), or `nil` when it matches.
    public func mismatch(in value: JSON) -> JSONShapeMismatch? {
        check(value, path: "$")
    }

    private func check(_ value: JSON, path: String) -> JSONShapeMismatch? {
        switch self {
        case .any:
            return nil
        case .optional(let shape), .nullable(let shape):
            return value.isNull ? nil : shape.check(value, path: path)
        case .oneOf(let shapes):
            if shapes.contains(where: { $0.check(value, path: path) == nil }) { return nil }
            return JSONShapeMismatch(path: path, expected: expectation, found: value.kindName)
        case .string, .integer, .number, .bool:
            return matchesScalar(value) ? nil : JSONShapeMismatch(path: path, expected: expectation, found: value.kindName)
        case .object(let fields):
            guard case .object(let object) = value else {
                return JSONShapeMismatch(path: path, expected: expectation, found: value.kindName)
            }
            for key in fields.keys.sorted() {
                guard let shape = fields[key] else { continue }
                let childPath = JSONShapeMismatch.path(path, key: key)
                guard let child = object[key] else {
                    if case .optional = shape { continue }
                    return JSONShapeMismatch(path: childPath, expected: shape.expectation, found: "nothing (missing key)")
                }
                if let mismatch = shape.check(child, path: childPath) { return mismatch }
            }
            return nil
        case .array(let element):
            guard case .array(let items) = value else {
                return JSONShapeMismatch(path: path, expected: expectation, found: value.kindName)
            }
            for (index, item) in items.enumerated() {
                if let mismatch = element.check(item, path: "\(path)[\(index)]") { return mismatch }
            }
            return nil
        }
    }

    private func matchesScalar(_ value: JSON) -> Bool {
        switch (self, value) {
        case (.string, .string), (.integer, .integer), (.number, .integer), (.number, .double), (.bool, .bool): true
        default: false
        }
    }

    /// What this shape expects, in words: `string`, `object`, `array of string`, `string or null`.
    public var expectation: String {
        switch self {
        case .any: "any value"
        case .string: "string"
        case .integer: "integer"
        case .number: "number"
        case .bool: "bool"
        case .object: "object"
        case .array(let element): "array of \(element.expectation)"
        case .optional(let shape): "\(shape.expectation), null or nothing"
        case .nullable(let shape): "\(shape.expectation) or null"
        case .oneOf(let shapes) where shapes.isEmpty: "no value (an empty oneOf)"
        case .oneOf(let shapes): shapes.map(\.expectation).joined(separator: " or ")
        }
    }
}

/// Where a JSON value differs from its expected ``JSONShape``.
public struct JSONShapeMismatch: Error, Sendable, Hashable, CustomStringConvertible {
    /// The JSON path of the value: `$.user.id`, `$.items[2].size`, `$["odd key"]`.
    public let path: String
    /// What the shape expected: `string`.
    public let expected: String
    /// What was there: `number`, `null`, `nothing (missing key)`.
    public let found: String

    /// Creates a mismatch.
    public init(path: String, expected: String, found: String) {
        self.path = path
        self.expected = expected
        self.found = found
    }

    /// `$.user.id: expected string, found number`
    public var description: String { "\(path): expected \(expected), found \(found)" }

    static func path(_ parent: String, key: String) -> String {
        let simple = !key.isEmpty && key.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" }
        return simple ? "\(parent).\(key)" : "\(parent)[\(key.debugDescription)]"
    }
}

extension JSON {
    /// The kind of value, for messages: `string`, `number`, `null`…
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .integer, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}
