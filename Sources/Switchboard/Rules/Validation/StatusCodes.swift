/// A set of HTTP status codes, written as ranges, single codes or both.
///
/// ```swift
/// let ok: StatusCodes = .success                 // 200..<300
/// let alsoNotModified = StatusCodes(200..<300, 304)
/// let exact: StatusCodes = [200, 201, 204]
/// ```
public struct StatusCodes: Sendable, Hashable, ExpressibleByArrayLiteral, CustomStringConvertible {
    private var ranges: [ClosedRange<Int>]

    /// The codes of `range`.
    public init(_ range: Range<Int>) {
        ranges = range.isEmpty ? [] : [range.lowerBound...(range.upperBound - 1)]
    }

    /// The codes of `range`.
    public init(_ range: ClosedRange<Int>) {
        ranges = [range]
    }

    /// The codes of `range`, plus single `codes`.
    public init(_ range: Range<Int>, _ codes: Int...) {
        self.init(range)
        ranges += codes.map { $0...$0 }
    }

    /// Exactly `codes`.
    public init(_ codes: some Sequence<Int>) {
        ranges = codes.map { $0...$0 }
    }

    /// Exactly the listed codes.
    public init(arrayLiteral codes: Int...) {
        self.init(codes)
    }

    /// 200 to 299.
    public static let success = StatusCodes(200..<300)

    /// Whether `code` is in the set.
    public func contains(_ code: Int) -> Bool {
        ranges.contains { $0.contains(code) }
    }

    /// The codes of both sets.
    public func union(_ other: StatusCodes) -> StatusCodes {
        var copy = self
        copy.ranges += other.ranges
        return copy
    }

    /// `200...299, 304`
    public var description: String {
        ranges.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)...\($0.upperBound)" }.joined(separator: ", ")
    }
}
