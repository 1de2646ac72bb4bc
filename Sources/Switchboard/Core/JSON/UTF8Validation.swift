/// Validates UTF-8: `String(validating:)` where the platform has it (iOS 18, macOS 15 and later, and
/// Linux), this file's own check below that, and the offset of the first malformed byte for errors.
/// The fallback on older Apple platforms is written for, not built or tested in this project's CI
/// (the check itself, `portableString`, is tested on Linux).
enum UTF8Validation {
    /// The string `bytes` spell, or `nil` when they are not well-formed UTF-8.
    @inline(__always)
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            return String(validating: bytes, as: UTF8.self)
        }
        return portableString(bytes)
    }

    /// `string(_:)` without `String(validating:)`: the package's floor (iOS 15, macOS 12) predates it.
    static func portableString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        firstInvalidOffset(in: bytes) == bytes.count ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// Returns the offset of the first byte of the first ill-formed sequence, or `bytes.count` if all is well.
    ///
    /// Follows the Unicode well-formedness table: no overlong forms, no surrogates, nothing above U+10FFFF.
    static func firstInvalidOffset(in bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0x00...0x7F:
                index += 1
                continue
            case 0xC2...0xDF:
                length = 2
            case 0xE0:
                length = 3
                lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF:
                length = 3
            case 0xED:
                length = 3
                upper = 0x9F
            case 0xF0:
                length = 4
                lower = 0x90
            case 0xF1...0xF3:
                length = 4
            case 0xF4:
                length = 4
                upper = 0x8F
            default:
                return index
            }
            guard index + length <= count else { return index }
            let second = bytes[index + 1]
            guard second >= lower && second <= upper else { return index }
            for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 {
                return index
            }
            index += length
        }
        return count
    }
}
