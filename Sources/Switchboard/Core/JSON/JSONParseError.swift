/// A JSON syntax error with the byte offset at which it was detected.
///
/// ```swift
/// do {
///     _ = try JSON.parse(Data("[1,]".utf8))
/// } catch {
///     print(error)   // "unexpected character ']' at byte 3"
/// }
/// ```
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why parsing failed.
    public enum Reason: Sendable, Equatable {
        /// The input ended inside a value (or was empty).
        case unexpectedEndOfInput
        /// A byte that cannot start or continue a value here (carries the byte).
        case unexpectedCharacter(UInt8)
        /// A backslash escape other than `\" \\ \/ \b \f \n \r \t \uXXXX`.
        case invalidEscape
        /// `\u` not followed by four hexadecimal digits.
        case invalidUnicodeEscape
        /// A `\uD800`–`\uDFFF` escape that is not part of a high+low surrogate pair.
        case unpairedSurrogate
        /// A raw control character (U+0000–U+001F) inside a string.
        case controlCharacterInString
        /// Bytes that are not well-formed UTF-8.
        case invalidUTF8
        /// A number that violates the JSON grammar (leading zero, lone `-`, missing digits).
        case invalidNumber
        /// A number whose magnitude does not fit a finite `Double` (e.g. `1e400`).
        case numberOutOfRange
        /// Arrays/objects nested deeper than ``JSON/maximumDepth``.
        case nestingTooDeep
        /// Non-whitespace after the top-level value.
        case trailingCharacters
    }

    /// Zero-based byte offset into the input where the problem was found.
    public let offset: Int
    /// The kind of problem.
    public let reason: Reason

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - reason: The kind of problem.
    ///   - offset: Zero-based byte offset into the input.
    public init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// Human-readable text such as `"invalid escape at byte 5"`.
    public var description: String {
        "\(reasonText) at byte \(offset)"
    }

    /// The reason as a phrase.
    private var reasonText: String {
        switch reason {
        case .unexpectedEndOfInput:
            return "unexpected end of input"
        case .unexpectedCharacter(let byte):
            if byte >= 0x21 && byte < 0x7F {
                return "unexpected character '\(Character(Unicode.Scalar(byte)))'"
            }
            let hex = String(byte, radix: 16, uppercase: true)
            return "unexpected byte 0x\(hex.count == 1 ? "0" + hex : hex)"
        case .invalidEscape:
            return "invalid escape"
        case .invalidUnicodeEscape:
            return "invalid \\u escape"
        case .unpairedSurrogate:
            return "unpaired UTF-16 surrogate escape"
        case .controlCharacterInString:
            return "unescaped control character in string"
        case .invalidUTF8:
            return "invalid UTF-8"
        case .invalidNumber:
            return "invalid number"
        case .numberOutOfRange:
            return "number out of range"
        case .nestingTooDeep:
            return "nesting deeper than \(JSON.maximumDepth) levels"
        case .trailingCharacters:
            return "unexpected data after the top-level value"
        }
    }
}
