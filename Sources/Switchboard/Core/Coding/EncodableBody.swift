import Foundation

/// A request body held as an `Encodable` value, encoded to JSON when the request is built (see
/// ``RequestBody/encodable(_:coding:)``).
public struct EncodableBody: Sendable, Hashable, CustomStringConvertible {
    /// The value.
    public let value: any Encodable & Sendable
    /// Its own encoding strategies; `nil` uses ``Configuration/jsonCoding``.
    public let coding: JSONCoding?

    /// Holds `value`, to be encoded with `coding` (or the configuration's strategies).
    public init(_ value: any Encodable & Sendable, coding: JSONCoding? = nil) {
        self.value = value
        self.coding = coding
    }

    /// The JSON bytes, with ``coding`` or else `defaults`.
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` naming the type, the coding path and why it
    ///   could not be encoded (a non-finite `Double`, an encoder's own error).
    public func encoded(defaults: JSONCoding = JSONCoding()) throws(NetworkError) -> Data {
        do {
            return try (coding ?? defaults).makeEncoder().encode(value)
        } catch let error as EncodingError {
            switch error {
            case .invalidValue(let invalid, let context):
                throw .invalidRequest(
                    reason: "the \(type(of: value)) body could not be encoded: \(type(of: invalid)) at \(DecodingFailure.path(context.codingPath)): \(context.debugDescription)")
            @unknown default:
                throw .invalidRequest(reason: "the \(type(of: value)) body could not be encoded: \(error)")
            }
        } catch {
            throw .invalidRequest(reason: "the \(type(of: value)) body could not be encoded: \(error)")
        }
    }

    /// The value's type, not its contents (which may hold a password): `encodable NewPost`.
    public var description: String { "encodable \(type(of: value))" }

    /// Two bodies are equal when they encode to the same bytes (with their own strategies or the
    /// defaults, keys sorted); bodies that can't be encoded compare by type and description.
    public static func == (lhs: EncodableBody, rhs: EncodableBody) -> Bool {
        lhs.comparable == rhs.comparable
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(comparable)
    }

    private var comparable: Data {
        var sorted = coding ?? JSONCoding()
        sorted.outputFormatting.insert(.sortedKeys)
        return (try? EncodableBody(value, coding: sorted).encoded()) ?? Data(("unencodable \(type(of: value)) \(value)").utf8)
    }
}
