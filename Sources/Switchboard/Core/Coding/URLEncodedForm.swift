import Foundation

/// `application/x-www-form-urlencoded` / URL query encoding of ``JSON`` parameters.
///
/// Rules:
/// - Names and values are percent-encoded per RFC 3986: only `A–Z a–z 0–9 - . _ ~` stay literal;
///   everything else, including space (`%20`, not `+`), `+ & = [ ]` and all non-ASCII UTF-8 bytes, is escaped.
/// - Object keys are sorted at every level; nested objects use bracket syntax `a[b][c]=1`, arrays
///   `a[]=1&a[]=2`, arrays of objects `a[][x]=1`. The brackets of this syntax are literal in the output
///   of ``encode(_:)``; ``appendingQuery(_:to:)`` escapes them (`%5B`/`%5D`) because Foundation rejects raw
///   brackets in a query. Servers (Rails, PHP, qs) decode both forms identically.
/// - Empty nested objects and empty arrays produce no pairs.
/// - `true`/`false` are written as `true`/`false`; `null` as an empty value (`k=`).
/// - Integers are exact; integral doubles below 2^53 in magnitude drop the `.0` (`2.0` → `2`), other doubles
///   use the shortest round-tripping text (`0.5`, `1e%2B20`); non-finite doubles become an empty value.
public enum URLEncodedForm {
    /// Encodes an object of parameters as `name=value` pairs joined by `&`.
    ///
    /// - Parameter parameters: The parameters; must be `.object` (an empty object yields `""`).
    /// - Returns: The encoded text, e.g. `a=1&b[c]=2`; `""` for an empty object.
    /// - Throws: ``ParameterEncodingError/topLevelNotObject`` when `parameters` is not an object.
    ///
    /// ```swift
    /// try URLEncodedForm.encode(["q": "a b", "filter": ["tag": "x"]])  // "filter[tag]=x&q=a%20b"
    /// ```
    public static func encode(_ parameters: JSON) throws(ParameterEncodingError) -> String {
        guard case .object(let members) = parameters else {
            throw .topLevelNotObject
        }
        var pairs: [(name: String, value: String)] = []
        for key in members.keys.sorted() {
            appendPairs(name: escape(key), value: members[key] ?? .null, escape: escape, to: &pairs)
        }
        return pairs.map { $0.name + "=" + $0.value }.joined(separator: "&")
    }

    /// The name/value pairs of an object of parameters, unescaped, in the order and with the bracket
    /// names of ``encode(_:)`` (`a[b]`, `a[]`): the fields of a multipart form.
    /// - Throws: ``ParameterEncodingError/topLevelNotObject`` when `parameters` is not an object.
    static func fields(_ parameters: JSON) throws(ParameterEncodingError) -> [(name: String, value: String)] {
        guard case .object(let members) = parameters else {
            throw .topLevelNotObject
        }
        var pairs: [(name: String, value: String)] = []
        for key in members.keys.sorted() {
            appendPairs(name: key, value: members[key] ?? .null, escape: { $0 }, to: &pairs)
        }
        return pairs
    }

    /// Appends already encoded query text to a URL's query, keeping its path and fragment.
    ///
    /// Joins with `&` when the URL already has a non-empty query and starts a query otherwise (never `?&`).
    /// Existing `%XX` escapes are kept as they are; characters that are not allowed in a URL query
    /// (such as `[`, `]`, space, `#` or a `%` not followed by two hex digits) are percent-encoded.
    ///
    /// - Parameters:
    ///   - encoded: Query text, typically from ``encode(_:)``. Empty text returns `url` unchanged.
    ///   - url: The URL to extend.
    /// - Returns: The URL with the query appended.
    ///
    /// ```swift
    /// let url = URLEncodedForm.appendingQuery("page=2", to: URL(string: "https://api.example.com/items?sort=asc#top")!)
    /// // https://api.example.com/items?sort=asc&page=2#top
    /// ```
    public static func appendingQuery(_ encoded: String, to url: URL) -> URL {
        let addition = sanitizedQuery(encoded)
        guard !addition.isEmpty else { return url }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return appendingQueryByText(addition, to: url)
        }
        let existing = components.percentEncodedQuery ?? ""
        if existing.isEmpty {
            components.percentEncodedQuery = addition
        } else if existing.hasSuffix("&") {
            components.percentEncodedQuery = existing + addition
        } else {
            components.percentEncodedQuery = existing + "&" + addition
        }
        return components.url ?? appendingQueryByText(addition, to: url)
    }

    /// Percent-encodes a name or value: everything except RFC 3986 unreserved characters.
    ///
    /// - Parameter text: The raw text.
    /// - Returns: The escaped text (uppercase hex digits).
    static func escape(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                output.append(byte)
            } else {
                appendPercentEscape(byte, to: &output)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Recursively appends the pairs for `value` under the already escaped `name`, escaping keys and
    /// values with `escape`.
    private static func appendPairs(name: String, value: JSON, escape: (String) -> String, to pairs: inout [(name: String, value: String)]) {
        switch value {
        case .object(let members):
            for key in members.keys.sorted() {
                appendPairs(name: name + "[" + escape(key) + "]", value: members[key] ?? .null, escape: escape, to: &pairs)
            }
        case .array(let elements):
            for element in elements {
                appendPairs(name: name + "[]", value: element, escape: escape, to: &pairs)
            }
        case .null:
            pairs.append((name, ""))
        case .bool(let flag):
            pairs.append((name, flag ? "true" : "false"))
        case .integer(let number):
            pairs.append((name, String(number)))
        case .double(let number):
            pairs.append((name, escape(formatted(number))))
        case .string(let text):
            pairs.append((name, escape(text)))
        }
    }

    /// Text for a double: integral values below 2^53 without `.0`, others shortest round-trip, non-finite empty.
    private static func formatted(_ number: Double) -> String {
        guard number.isFinite else { return "" }
        if abs(number) < 9_007_199_254_740_992, let integer = Int64(exactly: number) {
            return String(integer)
        }
        return number.description
    }

    /// Escapes every byte a URL query may not contain, keeping valid `%XX` escapes intact.
    private static func sanitizedQuery(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                if index + 2 < bytes.count, isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2]) {
                    output.append(contentsOf: bytes[index...(index + 2)])
                    index += 3
                } else {
                    appendPercentEscape(byte, to: &output)
                    index += 1
                }
                continue
            }
            if isUnreserved(byte) || isAllowedInQuery(byte) {
                output.append(byte)
            } else {
                appendPercentEscape(byte, to: &output)
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Fallback when `URLComponents` cannot take the URL apart: splice the text before any fragment.
    private static func appendingQueryByText(_ addition: String, to url: URL) -> URL {
        let absolute = url.absoluteString
        let fragmentStart = absolute.firstIndex(of: "#") ?? absolute.endIndex
        let head = absolute[..<fragmentStart]
        let separator: String
        if !head.contains("?") {
            separator = "?"
        } else if head.hasSuffix("?") || head.hasSuffix("&") {
            separator = ""
        } else {
            separator = "&"
        }
        return URL(string: head + separator + addition + absolute[fragmentStart...]) ?? url
    }

    /// RFC 3986 unreserved: `A–Z a–z 0–9 - . _ ~`.
    @inline(__always)
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// RFC 3986 query characters beyond unreserved and `%`: sub-delims, `:`, `@`, `/`, `?`.
    private static func isAllowedInQuery(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            return true
        default:
            return false
        }
    }

    /// Whether `byte` is an ASCII hex digit.
    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            return true
        default:
            return false
        }
    }

    /// Appends `%XX` (uppercase) for `byte`.
    private static func appendPercentEscape(_ byte: UInt8, to output: inout [UInt8]) {
        let digits: StaticString = "0123456789ABCDEF"
        output.append(UInt8(ascii: "%"))
        output.append(digits.utf8Start[Int(byte >> 4)])
        output.append(digits.utf8Start[Int(byte & 0x0F)])
    }
}
