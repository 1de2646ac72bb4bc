import Foundation

/// An image format recognised by its leading bytes (its "magic number"), not by a file name.
///
/// ```swift
/// ImageFormat(detecting: data)        // .jpeg, .png, … or nil
/// ImageFormat.png.mimeType            // "image/png"
/// ```
public enum ImageFormat: String, Sendable, Hashable, CaseIterable {
    /// JPEG: `FF D8 FF`.
    case jpeg
    /// PNG: `89 50 4E 47 0D 0A 1A 0A`.
    case png
    /// GIF: `GIF87a` or `GIF89a`.
    case gif
    /// WebP: `RIFF`, a size, `WEBP`.
    case webp
    /// HEIC/HEIF: an ISO media `ftyp` box with a HEIF brand (`heic`, `heix`, `mif1`, …).
    case heic

    /// Recognises the format of `data` from its first bytes; `nil` when it is none of these.
    public init?(detecting data: Data) {
        guard let format = data.withUnsafeBytes({ Self.detect(UnsafeRawBufferPointer(rebasing: $0.prefix(32))) }) else { return nil }
        self = format
    }

    /// The MIME type: `image/jpeg`, `image/png`, `image/gif`, `image/webp`, `image/heic`.
    public var mimeType: String { "image/\(rawValue)" }

    /// The usual file extension, without the dot.
    public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

    /// The format of the bytes in `header` (at least the first 12 are needed).
    static func detect(_ header: UnsafeRawBufferPointer) -> ImageFormat? {
        let bytes = Array(header)
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        // ISO base media: a box size, then "ftyp" and a brand of the HEIF family.
        if starts(Array("ftyp".utf8), at: 4), bytes.count >= 12 {
            let brand = String(decoding: bytes[8..<12], as: UTF8.self)
            if Self.heifBrands.contains(brand) { return .heic }
        }
        return nil
    }

    private static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"]
}
