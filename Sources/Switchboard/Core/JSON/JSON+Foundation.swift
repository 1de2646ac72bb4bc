import Foundation

/// Conversion to and from `JSONSerialization`-style Foundation values.
extension JSON {
    /// The value as a Foundation object graph: `NSNull`, `NSNumber`, `String`, `[Any]` or `[String: Any]`.
    ///
    /// Booleans become boolean `NSNumber`s, so `JSONSerialization` writes them as `true`/`false`.
    ///
    /// ```swift
    /// let dictionary = json.foundationObject as? [String: Any]
    /// ```
    public var foundationObject: Any {
        switch self {
        case .null:
            return NSNull()
        case .bool(let value):
            return NSNumber(value: value)
        case .integer(let value):
            return NSNumber(value: value)
        case .double(let value):
            return NSNumber(value: value)
        case .string(let value):
            return value
        case .array(let values):
            return values.map(\.foundationObject)
        case .object(let members):
            var result = [String: Any](minimumCapacity: members.count)
            for (key, value) in members {
                result[key] = value.foundationObject
            }
            return result
        }
    }

    /// Converts a `JSONSerialization`-style value (`NSNull`, `NSNumber`, `String`, arrays, string-keyed dictionaries).
    ///
    /// Boolean `NSNumber`s become `.bool`, integral ones `.integer` (unsigned values above `Int64.max`
    /// become `.double`), floating-point ones `.double`. Swift `Bool`/`Int`/`Double` values bridge the same way.
    /// On Apple platforms (written for, not built or tested in this project's CI): a boolean is
    /// recognised as a `CFBoolean`.
    ///
    /// - Parameter foundationObject: The value to convert.
    /// - Returns: `nil` when the value (or anything nested in it) has no JSON representation.
    ///
    /// ```swift
    /// let object = try JSONSerialization.jsonObject(with: data)
    /// let json = JSON(foundationObject: object)
    /// ```
    public init?(foundationObject: Any) {
        switch foundationObject {
        case let json as JSON:
            self = json
        case is NSNull:
            self = .null
        case let string as String:
            self = .string(string)
        case let number as NSNumber:
            self = JSON(number: number)
        case let array as [Any]:
            var values: [JSON] = []
            values.reserveCapacity(array.count)
            for element in array {
                guard let value = JSON(foundationObject: element) else { return nil }
                values.append(value)
            }
            self = .array(values)
        case let dictionary as [String: Any]:
            var members = [String: JSON](minimumCapacity: dictionary.count)
            for (key, element) in dictionary {
                guard let value = JSON(foundationObject: element) else { return nil }
                members[key] = value
            }
            self = .object(members)
        default:
            return nil
        }
    }

    /// Classifies an `NSNumber` as boolean, integer or floating point.
    private init(number: NSNumber) {
        if JSON.isBoolean(number) {
            self = .bool(number.boolValue)
            return
        }
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "d"), UInt8(ascii: "f"):
            self = .double(number.doubleValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"):
            let unsigned = number.uint64Value
            if let exact = Int64(exactly: unsigned) {
                self = .integer(exact)
            } else {
                self = .double(Double(unsigned))
            }
        case UInt8(ascii: "c"), UInt8(ascii: "C"), UInt8(ascii: "s"), UInt8(ascii: "S"),
            UInt8(ascii: "i"), UInt8(ascii: "I"), UInt8(ascii: "l"), UInt8(ascii: "q"):
            self = .integer(number.int64Value)
        default:
            let double = number.doubleValue
            if let exact = Int64(exactly: double) {
                self = .integer(exact)
            } else {
                self = .double(double)
            }
        }
    }

    /// Whether `number` is a boolean `NSNumber` (CFBoolean on Darwin, objCType `c` in corelibs Foundation).
    private static func isBoolean(_ number: NSNumber) -> Bool {
        #if canImport(Darwin)
        return CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
        // swift-corelibs-foundation reports "c" only for booleans; Int8/UInt8 report "i".
        return UInt8(bitPattern: number.objCType.pointee) == UInt8(ascii: "c")
        #endif
    }
}
