import Foundation

/// A hash that is the same in every process and on every platform (Swift's `Hasher` is seeded per
/// process), for file names derived from keys: 128 bits of FNV-1a, as 32 hex digits. Not for security;
/// whoever uses it stores the whole key beside it and compares, so a collision is a miss.
enum StableHash {
    static func hex(_ text: String) -> String {
        var low: UInt64 = 0xcbf2_9ce4_8422_2325, high: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in text.utf8 {
            low = (low ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            high = (high ^ UInt64(byte ^ 0x5A)) &* 0x0000_0100_0000_01B3
        }
        return digits(high) + digits(low)
    }

    /// 64-bit FNV-1a of `data`: a checksum that finds a changed or cut body.
    static func fnv(_ data: Data) -> UInt64 {
        data.withUnsafeBytes { raw in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in raw { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
            return hash
        }
    }

    private static func digits(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
