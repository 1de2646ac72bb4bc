import Foundation

/// A JSON value: null, boolean, exact 64-bit integer, double, string, array or object.
///
/// Integers are kept exact as `Int64`; any number with a fraction, an exponent or a
/// magnitude beyond `Int64` is a `.double`. Note that `.integer(1)` and `.double(1)` are
/// different values for `==` and hashing.
///
/// ```swift
/// let payload: JSON = ["type": "List", "start": 0, "tags": ["a"], "x": nil]
/// let parsed = try JSON.parse(Data(#"{"user":{"id":42}}"#.utf8))
/// let id = parsed["user"]["id"].int          // 42
/// let body = payload.serialized(sortedKeys: true)
/// ```
public enum JSON: Sendable, Hashable {
    /// The JSON `null` literal.
    case null
    /// A JSON `true` or `false`.
    case bool(Bool)
    /// A JSON number without fraction or exponent that fits `Int64` exactly.
    case integer(Int64)
    /// Any other JSON number (always finite when produced by the parser).
    case double(Double)
    /// A JSON string.
    case string(String)
    /// A JSON array.
    case array([JSON])
    /// A JSON object; key order is not preserved.
    case object([String: JSON])
}
