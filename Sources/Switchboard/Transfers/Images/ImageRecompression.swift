import Foundation
#if canImport(ImageIO) && canImport(CoreGraphics)
import CoreGraphics
import ImageIO
#endif

/// Re-encodes images as JPEG at a quality, where the platform can (ImageIO on Apple platforms).
enum ImageRecompression {
    /// Whether this platform re-encodes (`false` on Linux and Windows: images are sent as they are).
    static var isAvailable: Bool {
        #if canImport(ImageIO) && canImport(CoreGraphics)
        true
        #else
        false
        #endif
    }

    /// `data` re-encoded as JPEG at `quality` (0…1), or `nil` where that isn't possible.
    static func jpeg(_ data: Data, quality: Double) -> Data? {
        #if canImport(ImageIO) && canImport(CoreGraphics)
        guard let source = CGImageSourceCreateWithData(data as CFData, nil),
            let image = CGImageSourceCreateImageAtIndex(source, 0, nil)
        else { return nil }
        let output = NSMutableData()
        guard let destination = CGImageDestinationCreateWithData(output as CFMutableData, "public.jpeg" as CFString, 1, nil) else { return nil }
        let options = [kCGImageDestinationLossyCompressionQuality: max(0, min(1, quality))] as CFDictionary
        CGImageDestinationAddImage(destination, image, options)
        guard CGImageDestinationFinalize(destination) else { return nil }
        return output as Data
        #else
        _ = (data, quality)
        return nil
        #endif
    }
}
