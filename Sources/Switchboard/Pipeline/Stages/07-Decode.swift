import Foundation

/// Stage 7 — decode: a JSON response's body is parsed once, into ``JSON`` (an empty body is
/// ``JSON/null``); a cache entry that was parsed before hands its tree in instead. Malformed JSON is
/// ``NetworkError/decoding(reason:snippet:)`` with a redacted snippet of the body.
enum DecodeStage {
    /// `redaction` is read only for a snippet of a body that failed to parse.
    static func run(_ data: Data, parsed: JSON?, redaction: @autoclosure () -> Redaction) -> Result<JSON, NetworkError> {
        guard !data.isEmpty else { return .success(.null) }
        do {
            return .success(try parsed ?? JSON.parse(data))
        } catch {
            return .failure(.decoding(reason: "\(error)", snippet: redaction().snippet(of: data, limit: 120)))
        }
    }
}
