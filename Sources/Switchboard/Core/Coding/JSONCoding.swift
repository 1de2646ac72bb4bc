import Foundation

/// How `Encodable` bodies are encoded and typed responses decoded: the strategies of a `JSONEncoder`
/// and a `JSONDecoder`, held as values (a dispatcher shares no mutable coder with your code).
///
/// ```swift
/// Dispatcher.shared.updateConfiguration {
///     $0.jsonCoding.keyDecoding = .convertFromSnakeCase
///     $0.jsonCoding.dateDecoding = .iso8601
/// }
/// ```
/// ``Configuration/jsonCoding`` is every send's default; ``RequestBody/encodable(_:coding:)`` may
/// give a body its own. The defaults are Foundation's, but for sorted keys (see ``outputFormatting``).
public struct JSONCoding: Sendable {
    /// How `Date`s are encoded. Default: `.deferredToDate` (seconds since 2001, Foundation's default).
    public var dateEncoding: JSONEncoder.DateEncodingStrategy = .deferredToDate
    /// How keys are encoded. Default: `.useDefaultKeys`.
    public var keyEncoding: JSONEncoder.KeyEncodingStrategy = .useDefaultKeys
    /// How `Data` is encoded. Default: `.base64`.
    public var dataEncoding: JSONEncoder.DataEncodingStrategy = .base64
    /// The encoder's output formatting. Default: `[.sortedKeys]`, so that one value is always the same
    /// bytes (Foundation's encoder otherwise orders an object's keys differently from one encoding to
    /// the next, on Linux even a struct's): identical sends coalesce, and a signature over the body
    /// holds.
    public var outputFormatting: JSONEncoder.OutputFormatting = [.sortedKeys]
    /// How `Date`s are decoded. Default: `.deferredToDate`.
    public var dateDecoding: JSONDecoder.DateDecodingStrategy = .deferredToDate
    /// How keys are decoded. Default: `.useDefaultKeys`.
    public var keyDecoding: JSONDecoder.KeyDecodingStrategy = .useDefaultKeys
    /// How `Data` is decoded. Default: `.base64`.
    public var dataDecoding: JSONDecoder.DataDecodingStrategy = .base64

    /// The defaults: Foundation's, with sorted keys.
    public init() {}

    /// The defaults, changed by `configure`.
    public init(_ configure: (inout JSONCoding) -> Void) {
        configure(&self)
    }

    /// A new encoder with these strategies.
    public func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = dateEncoding
        encoder.keyEncodingStrategy = keyEncoding
        encoder.dataEncodingStrategy = dataEncoding
        encoder.outputFormatting = outputFormatting
        return encoder
    }

    /// A new decoder with these strategies.
    public func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = dateDecoding
        decoder.keyDecodingStrategy = keyDecoding
        decoder.dataDecodingStrategy = dataDecoding
        return decoder
    }
}
