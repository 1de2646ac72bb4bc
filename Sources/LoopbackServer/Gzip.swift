import Foundation

/// A minimal gzip writer using stored (uncompressed) deflate blocks: valid gzip that any client
/// decodes, with no zlib needed. Its Content-Length is *larger* than the decoded body, which is what
/// the compressed-response tests need (URLSession reports the encoded length, hands over decoded bytes).
/// The demo uses it for seed 000's gzipped custom request, which the `/events` route unpacks.
public enum Gzip {
    /// `data` as a gzip stream of stored deflate blocks.
    public static func stored(_ data: Data) -> Data {
        var out = Data([0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF])  // header: deflate, no flags, unknown OS
        let bytes = [UInt8](data)
        var offset = 0
        repeat {
            let count = min(65_535, bytes.count - offset)
            let final: UInt8 = offset + count >= bytes.count ? 1 : 0
            out.append(final)  // BFINAL + BTYPE=00 (stored)
            out.append(contentsOf: [UInt8(count & 0xFF), UInt8(count >> 8)])
            out.append(contentsOf: [UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)])
            out.append(contentsOf: bytes[offset..<offset + count])
            offset += count
        } while offset < bytes.count
        appendLittleEndian(crc32(bytes), to: &out)
        appendLittleEndian(UInt32(truncatingIfNeeded: bytes.count), to: &out)
        return out
    }

    /// A small gzip stream that decodes to `count` zero bytes (rounded to 1 + a multiple of 258): one
    /// literal, then back-references of 258 bytes in a fixed-Huffman block, 13 bits each. A "gzip bomb"
    /// for size-limit tests: 4 MiB of zeros take about 26 KB.
    public static func zeros(_ count: Int) -> Data {
        var bits = BitWriter()
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE = 01, fixed Huffman
        bits.writeCode(0x30, length: 8)  // the literal 0x00
        let matches = max(0, (count - 1) / 258)
        for _ in 0..<matches {
            bits.writeCode(0b1100_0101, length: 8)  // length code 285: 258 bytes
            bits.writeCode(0, length: 5)  // distance code 0: distance 1
        }
        bits.writeCode(0, length: 7)  // end of block (256)
        let total = 1 + matches * 258
        var out = Data([0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF])
        out.append(contentsOf: bits.flushed)
        appendLittleEndian(crc32OfZeros(total), to: &out)
        appendLittleEndian(UInt32(truncatingIfNeeded: total), to: &out)
        return out
    }

    /// Deflate's bit order: values least significant bit first, Huffman codes most significant first.
    private struct BitWriter {
        var bytes: [UInt8] = []
        private var current: UInt8 = 0
        private var used = 0

        mutating func write(_ value: UInt32, count: Int) {
            for index in 0..<count { put(UInt8((value >> index) & 1)) }
        }

        mutating func writeCode(_ code: UInt32, length: Int) {
            for index in stride(from: length - 1, through: 0, by: -1) { put(UInt8((code >> index) & 1)) }
        }

        private mutating func put(_ bit: UInt8) {
            current |= bit << used
            used += 1
            if used == 8 {
                bytes.append(current)
                current = 0
                used = 0
            }
        }

        var flushed: [UInt8] { used == 0 ? bytes : bytes + [current] }
    }

    private static func crc32OfZeros(_ count: Int) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for _ in 0..<count {
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }

    private static func appendLittleEndian(_ value: UInt32, to data: inout Data) {
        data.append(contentsOf: [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)])
    }

    /// The CRC-32 (gzip's, IEEE 802.3) of `bytes`: what a gzip stream's trailer holds.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }
}
