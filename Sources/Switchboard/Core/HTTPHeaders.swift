/// An ordered list of HTTP header fields whose names compare case-insensitively.
///
/// ```swift
/// var headers: HTTPHeaders = ["Accept": "application/json"]
/// headers["X-Trace"] = "abc"
/// headers["accept"]   // "application/json"
/// ```
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The name as it was given (sent with this spelling).
        public var name: String
        /// The value.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    /// Creates an empty list.
    public init() { fields = [] }

    /// Creates a list from fields in order; a later field with the same name replaces an earlier one.
    /// Linear in the number of fields.
    public init(_ fields: [Field]) {
        self.init(fields, joining: false)
    }

    /// Creates a list from fields as received, a repeated name (ASCII case ignored) joined into its
    /// first field with ", " (as `HTTPURLResponse` joins them), in the order first seen.
    init(received fields: [Field]) {
        self.init(fields, joining: true)
    }

    private init(_ fields: [Field], joining: Bool) {
        self.fields = []
        self.fields.reserveCapacity(fields.count)
        // A few fields (a request's own headers): the subscript's scan is cheaper than an index.
        if fields.count <= 16 {
            for field in fields {
                let earlier = joining ? self[field.name] : nil
                self[field.name] = earlier.map { "\($0), \(field.value)" } ?? field.value
            }
            return
        }
        // Keyed by bytes, ASCII case folded: the same rule as lookup (String keys would also merge
        // canonically equivalent names).
        var positions: [[UInt8]: Int] = [:]
        for field in fields {
            let key = field.name.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
            if let index = positions[key] {
                self.fields[index].value = joining ? "\(self.fields[index].value), \(field.value)" : field.value
            } else {
                positions[key] = self.fields.count
                self.fields.append(field)
            }
        }
    }

    /// Creates a list from a dictionary, sorted by name so the order is stable.
    public init(_ dictionary: [String: String]) {
        self.init(dictionary.sorted { $0.key < $1.key }.map { Field(name: $0.key, value: $0.value) })
    }

    /// Creates a list from a dictionary literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { Field(name: $0.0, value: $0.1) })
    }

    /// The value for `name` (case-insensitive); setting `nil` removes the field.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            if let index = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
                if let newValue { fields[index].value = newValue } else { fields.remove(at: index) }
            } else if let newValue {
                fields.append(Field(name: name, value: newValue))
            }
        }
    }

    /// Adds or replaces every field of `other`; `other` wins on a name both have.
    public mutating func merge(_ other: HTTPHeaders) {
        if other.fields.count <= 8 {
            for field in other.fields { self[field.name] = field.value }
        } else {
            self = HTTPHeaders(fields + other.fields)
        }
    }

    /// A copy with every field of `other` added or replaced.
    public func merging(_ other: HTTPHeaders) -> HTTPHeaders {
        var copy = self
        copy.merge(other)
        return copy
    }

    /// The fields as a dictionary (names as given).
    public var dictionary: [String: String] {
        var dictionary = [String: String](minimumCapacity: fields.count)
        for field in fields { dictionary[field.name] = field.value }  // the last of equal names wins
        return dictionary
    }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The number of fields.
    public var count: Int { fields.count }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// `Name: value` lines.
    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// The first field whose name or value cannot be sent: an empty or non-token name, or a value with
    /// CR, LF or NUL (header injection). `nil` when every field is valid.
    package var firstInvalidField: (field: Field, reason: String)? {
        for field in fields {
            if field.name.isEmpty { return (field, "empty header name") }
            if !field.name.utf8.allSatisfy(HTTPHeaders.isTokenByte) {
                return (field, "header name \(field.name.debugDescription) has characters not allowed in a token")
            }
            if field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) {
                return (field, "header \(field.name) has a CR, LF or NUL in its value")
            }
        }
        return nil
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension String {
    /// ASCII case-insensitive equality, for header names.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        // This runs for every field of every response head a transport parses: over the bytes in place
        // where the strings are native (almost always), index by index otherwise.
        let inPlace = utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b in Self.foldedEqual(a, b) }
        }
        if let inPlace, let result = inPlace { return result }
        return Self.foldedEqual(utf8, other.utf8)
    }

    @inline(__always)
    private static func foldedEqual<C: Collection<UInt8>>(_ a: C, _ b: C) -> Bool {
        var i = a.startIndex, j = b.startIndex
        while i != a.endIndex, j != b.endIndex {
            let x = a[i], y = b[j]
            if x != y {
                let folded = x | 0x20
                guard folded == y | 0x20, folded >= 0x61, folded <= 0x7A else { return false }
            }
            a.formIndex(after: &i)
            b.formIndex(after: &j)
        }
        return i == a.endIndex && j == b.endIndex
    }
}

extension HTTPHeaders {
    /// The fields that carry credentials: never sent to another origin, and they keep a request out
    /// of the response cache unless its policy allows them (in this order in the cache key).
    static let credentialNames = ["Authorization", "Proxy-Authorization", "Cookie"]

    /// What the cache key needs to know of a built request's fields, in one pass: the last
    /// `Content-Type`, and whether any field carries credentials.
    var contentTypeAndCredentials: (contentType: String?, carriesCredentials: Bool) {
        var contentType: String?
        var credentials = false
        for field in fields {
            if field.name.caseInsensitiveEquals("Content-Type") {
                contentType = field.value
            } else if !credentials, Self.credentialNames.contains(where: field.name.caseInsensitiveEquals) {
                credentials = true
            }
        }
        return (contentType, credentials)
    }
}
