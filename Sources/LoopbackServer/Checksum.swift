import Foundation

/// A fast order-sensitive checksum for comparing uploaded and downloaded bytes (FNV-1a over 64-bit
/// words, then the remaining bytes): the same bytes give the same value however they are split into
/// pieces. Not cryptographic.
///
/// ```swift
/// var checksum = Checksum()
/// checksum.update(first); checksum.update(second)
/// checksum.hex == Checksum.of(first + second)    // true
/// ```
public struct Checksum: Sendable, Equatable {
    private var state: UInt64 = 0xcbf2_9ce4_8422_2325
    /// Bytes not yet folded in (fewer than 8).
    private var pending: UInt64 = 0
    private var pendingCount = 0
    /// The number of bytes seen.
    public private(set) var count: Int64 = 0

    /// A checksum of no bytes.
    public init() {}

    /// Folds in `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        count += Int64(bytes.count)
        var index = 0
        // Complete a pending word byte by byte first.
        while pendingCount > 0 && index < bytes.count {
            pending |= UInt64(bytes[index]) << (8 * UInt64(pendingCount))
            pendingCount += 1
            index += 1
            if pendingCount == 8 { fold(pending); pending = 0; pendingCount = 0 }
        }
        while index + 8 <= bytes.count {
            fold(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self).littleEndian)
            index += 8
        }
        while index < bytes.count {
            pending |= UInt64(bytes[index]) << (8 * UInt64(pendingCount))
            pendingCount += 1
            index += 1
        }
    }

    /// Folds in `data`.
    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// The checksum of the bytes so far, as 16 hex digits followed by `:` and the byte count.
    public var hex: String {
        var final = state
        if pendingCount > 0 { final = (final ^ pending ^ UInt64(pendingCount) << 56) &* 0x0000_0100_0000_01B3 }
        let digits = String(final, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits + ":\(count)"
    }

    /// The checksum of `data`.
    public static func of(_ data: Data) -> String {
        var checksum = Checksum()
        checksum.update(data)
        return checksum.hex
    }

    private mutating func fold(_ word: UInt64) {
        state = (state ^ word) &* 0x0000_0100_0000_01B3
    }
}
