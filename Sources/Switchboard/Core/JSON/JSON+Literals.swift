/// `nil` literal support: `let value: JSON = nil` is `.null`.
extension JSON: ExpressibleByNilLiteral {
    /// Creates `.null` from the `nil` literal.
    ///
    /// - Parameter nilLiteral: The `nil` literal.
    public init(nilLiteral: ()) {
        self = .null
    }
}

/// Boolean literal support: `let value: JSON = true`.
extension JSON: ExpressibleByBooleanLiteral {
    /// Creates `.bool` from a boolean literal.
    ///
    /// - Parameter value: The literal value.
    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }
}

/// Integer literal support: `let value: JSON = 42`.
extension JSON: ExpressibleByIntegerLiteral {
    /// Creates `.integer` from an integer literal.
    ///
    /// - Parameter value: The literal value.
    public init(integerLiteral value: Int64) {
        self = .integer(value)
    }
}

/// Floating-point literal support: `let value: JSON = 1.5`.
extension JSON: ExpressibleByFloatLiteral {
    /// Creates `.double` from a floating-point literal.
    ///
    /// - Parameter value: The literal value.
    public init(floatLiteral value: Double) {
        self = .double(value)
    }
}

/// String literal support: `let value: JSON = "text"`.
extension JSON: ExpressibleByStringLiteral {
    /// Creates `.string` from a string literal.
    ///
    /// - Parameter value: The literal value.
    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

/// Array literal support: `let value: JSON = [1, "two", nil]`.
extension JSON: ExpressibleByArrayLiteral {
    /// Creates `.array` from an array literal.
    ///
    /// - Parameter elements: The literal's elements.
    public init(arrayLiteral elements: JSON...) {
        self = .array(elements)
    }
}

/// Dictionary literal support: `let value: JSON = ["id": 1]`.
extension JSON: ExpressibleByDictionaryLiteral {
    /// Creates `.object` from a dictionary literal; for duplicate keys the last one wins.
    ///
    /// - Parameter elements: The literal's key-value pairs.
    public init(dictionaryLiteral elements: (String, JSON)...) {
        var object = [String: JSON](minimumCapacity: elements.count)
        for (key, value) in elements {
            object[key] = value
        }
        self = .object(object)
    }
}
