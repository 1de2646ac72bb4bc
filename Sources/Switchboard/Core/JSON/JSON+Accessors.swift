/// Non-trapping subscripts and typed accessors.
extension JSON {
    /// Returns the member named `key`, or `.null` when missing or when `self` is not an object.
    ///
    /// - Parameter key: The object key.
    /// - Returns: The member value, or `.null`.
    ///
    /// ```swift
    /// let id = json["user"]["id"].int
    /// ```
    public subscript(key: String) -> JSON {
        guard case .object(let object) = self else { return .null }
        return object[key] ?? .null
    }

    /// Returns the element at `index`, or `.null` when out of range or when `self` is not an array.
    ///
    /// - Parameter index: The zero-based array index.
    /// - Returns: The element, or `.null`.
    ///
    /// ```swift
    /// let first = json["items"][0]["name"].string
    /// ```
    public subscript(index: Int) -> JSON {
        guard case .array(let array) = self, array.indices.contains(index) else { return .null }
        return array[index]
    }

    /// The string payload, or `nil` when `self` is not `.string`.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value as `Int`: from `.integer` when it fits, or from `.double` when integral and in range.
    public var int: Int? {
        switch self {
        case .integer(let value):
            return Int(exactly: value)
        case .double(let value):
            return Int(exactly: value)
        default:
            return nil
        }
    }

    /// The value as `Int64`: from `.integer`, or from `.double` when integral and in range.
    public var int64: Int64? {
        switch self {
        case .integer(let value):
            return value
        case .double(let value):
            return Int64(exactly: value)
        default:
            return nil
        }
    }

    /// The value as `Double`, from `.double` or (possibly rounded) from `.integer`.
    public var double: Double? {
        switch self {
        case .double(let value):
            return value
        case .integer(let value):
            return Double(value)
        default:
            return nil
        }
    }

    /// The boolean payload, or `nil` when `self` is not `.bool` (numbers are not converted).
    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, or `nil` when `self` is not `.array`.
    public var array: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, or `nil` when `self` is not `.object`.
    public var object: [String: JSON]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// `true` when `self` is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
