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

    /// The content of a gzip stream made of stored blocks (what ``stored(_:)`` writes); `nil` for
    /// anything else (compressed blocks, a bad header or checksum).
    public static func unpackStored(_ gzip: Data) -> Data? {
        let bytes = [UInt8](gzip)
        guard bytes.count >= 18, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 0x08, bytes[3] == 0 else { return nil }
        var offset = 10
        var out: [UInt8] = []
        while true {
            guard offset + 5 <= bytes.count, bytes[offset] & 0b110 == 0 else { return nil }
            let final = bytes[offset] & 1 == 1
            let count = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8
            let complement = Int(bytes[offset + 3]) | Int(bytes[offset + 4]) << 8
            guard count == ~complement & 0xFFFF, offset + 5 + count <= bytes.count else { return nil }
            out += bytes[(offset + 5)..<(offset + 5 + count)]
            offset += 5 + count
            if final { break }
        }
        guard offset + 8 == bytes.count else { return nil }
        let crc = UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
        return crc == crc32(out) ? Data(out) : nil
    }

    private static func appendLittleEndian(_ value: UInt32, to data: inout Data) {
        data.append(contentsOf: [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)])
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }
}
