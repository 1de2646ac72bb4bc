import Foundation

/// Stage 7 — decode, once. A request whose ``Request/Value`` is ``JSON`` (the default) has its body
/// parsed into a tree (an empty body is ``JSON/null``; a cache entry parsed before hands its tree in).
/// Any other `Value` is decoded from the body's bytes by the configuration's `JSONDecoder` (no tree
/// is made for it: ``Response/json`` parses when read). Malformed JSON, or a body that doesn't match
/// the type, is ``NetworkError/decoding(reason:snippet:)``: the type, the coding path and what was
/// wrong, with a redacted snippet of the body.
package enum DecodeStage {
    /// `redaction` is read only for a snippet of a body that failed to parse.
    static func run(_ data: Data, parsed: JSON?, redaction: @autoclosure () -> Redaction) -> Result<JSON, NetworkError> {
        guard !data.isEmpty else { return .success(.null) }
        do {
            return .success(try parsed ?? JSON.parse(data))
        } catch {
            return .failure(.decoding(reason: "\(error)", snippet: redaction().snippet(of: data, limit: 120)))
        }
    }

    /// The typed decode as a send runs it (the bench's decode row measures this against `decoder`
    /// called directly).
    package static func typed<Value: Decodable & Sendable>(_ type: Value.Type, from data: Data, decoder: JSONDecoder) -> Result<Value, NetworkError> {
        run(type, from: data, decoder: decoder, redaction: .standard)
    }

    /// `data` decoded as `Value` (not ``JSON``) by `decoder`. An empty body is the type's
    /// ``EmptyBodyDecodable/emptyBodyValue`` when it has one; ``NoContent`` reads no body at all.
    static func run<Value: Decodable & Sendable>(
        _ type: Value.Type, from data: Data, decoder: JSONDecoder, redaction: @autoclosure () -> Redaction
    ) -> Result<Value, NetworkError> {
        if let empty = Value.self as? any EmptyBodyDecodable.Type, data.isEmpty || Value.self == NoContent.self {
            // The cast can't fail: `empty` is `Value.self`.
            if let value = empty.emptyBodyValue as? Value { return .success(value) }
        }
        if data.isEmpty {
            return .failure(.decoding(reason: "\(Value.self): the body is empty (declare the Value optional, or NoContent, for a body that may be)", snippet: ""))
        }
        do {
            return .success(try decoder.decode(Value.self, from: data))
        } catch {
            return .failure(.decoding(reason: DecodingFailure.describe(error, decoding: Value.self), snippet: redaction().snippet(of: data, limit: 120)))
        }
    }
}

/// Sentences for a failed decode: the type, where in the body, and what was wrong.
enum DecodingFailure {
    static func describe(_ error: any Error, decoding type: Any.Type) -> String {
        guard let error = error as? DecodingError else { return "\(type): \(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(type): no value for key \(key.stringValue.debugDescription) at \(path(context.codingPath))"
        case .valueNotFound(let expected, let context):
            return "\(type): null where \(expected) was expected at \(path(context.codingPath))"
        case .typeMismatch(let expected, let context):
            return "\(type): \(expected) expected at \(path(context.codingPath)): \(context.debugDescription)"
        case .dataCorrupted(let context):
            let cause = (context.underlyingError).map { " (\($0))" } ?? ""
            return "\(type): \(context.debugDescription)\(cause) at \(path(context.codingPath))"
        @unknown default:
            return "\(type): \(error)"
        }
    }

    /// `user.posts[2].title`, or `the top level`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        guard !codingPath.isEmpty else { return "the top level" }
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue == "Index \(index)" || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }
}
