import Foundation

/// `Codable` through a single-value container, so `JSON` can sit inside any `Codable` model.
extension JSON: Codable {
    /// Decodes whichever JSON case the decoder holds: null, bool, exact `Int64`, `Double`, string, array, object.
    ///
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError.typeMismatch` when the value is none of the JSON kinds.
    ///
    /// ```swift
    /// struct Event: Decodable { let payload: JSON }
    /// ```
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSON].self) {
            self = .object(value)
        } else {
            throw DecodingError.typeMismatch(
                JSON.self,
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "Value is not null, bool, number, string, array or object"
                )
            )
        }
    }

    /// Encodes the value into a single-value container.
    ///
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: Whatever the encoder throws (e.g. `JSONEncoder` for non-finite doubles).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null:
            try container.encodeNil()
        case .bool(let value):
            try container.encode(value)
        case .integer(let value):
            try container.encode(value)
        case .double(let value):
            try container.encode(value)
        case .string(let value):
            try container.encode(value)
        case .array(let value):
            try container.encode(value)
        case .object(let value):
            try container.encode(value)
        }
    }

    /// Decodes a `Decodable` type from this value (serializes it, then uses `JSONDecoder`).
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder to use; a default `JSONDecoder` unless given.
    /// - Returns: The decoded value.
    /// - Throws: `DecodingError` when the value does not match `type`.
    ///
    /// ```swift
    /// struct User: Decodable { let id: Int }
    /// let user = try json["user"].decode(User.self)
    /// ```
    public func decode<T: Decodable>(_ type: T.Type, using decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: serialized())
    }
}
