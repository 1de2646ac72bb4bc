import Foundation

/// Parsing JSON text into `JSON` values.
extension JSON {
    /// The deepest array/object nesting ``parse(_:)-(Data)`` accepts; deeper input fails with `.nestingTooDeep`.
    public static let maximumDepth = 512

    /// Parses UTF-8 JSON text (RFC 8259, strict).
    ///
    /// - Any value is accepted at top level; surrounding whitespace and one leading UTF-8 BOM are allowed.
    /// - Integers that fit `Int64` exactly become `.integer`; other numbers become `.double`. Numbers too
    ///   large for a finite `Double` (e.g. `1e400`) are an error, since JSON cannot carry infinity;
    ///   numbers too small (e.g. `1e-400`) round to zero.
    /// - Unpaired UTF-16 surrogate escapes (`"\uD800"`) are an error, as is invalid UTF-8.
    /// - For duplicate object keys the last one wins.
    ///
    /// - Parameter data: The UTF-8 encoded JSON text.
    /// - Returns: The parsed value.
    /// - Throws: ``JSONParseError`` with the byte offset and reason of the first problem.
    ///
    /// ```swift
    /// let json = try JSON.parse(Data(#"{"items":[{"id":1,"name":"Ada"}]}"#.utf8))
    /// json["items"][0]["name"].string   // "Ada"
    /// ```
    public static func parse(_ data: Data) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else {
                return .failure(JSONParseError(.unexpectedEndOfInput, at: 0))
            }
            var parser = JSONParser(base: base.assumingMemoryBound(to: UInt8.self), count: raw.count)
            do throws(JSONParseError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses UTF-8 JSON text given as a `String`.
    ///
    /// - Parameter text: The JSON text.
    /// - Returns: The parsed value.
    /// - Throws: ``JSONParseError`` with the byte offset (into `text.utf8`) of the first problem.
    ///
    /// ```swift
    /// let json = try JSON.parse(#"[1, 2.5, "three"]"#)
    /// ```
    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        try parse(Data(text.utf8))
    }
}
