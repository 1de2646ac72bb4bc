import Foundation

extension MultipartFormData {
    /// The default name of the image at `index`: the date (`yyyy-MM-dd`, UTC) and the index, with the
    /// format's extension: `2026-11-30-0.jpg`.
    public static func defaultImageFileName(date: Date, index: Int, format: ImageFormat) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let day = calendar.dateComponents([.year, .month, .day], from: date)
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(day.year ?? 0)-\(two(day.month))-\(two(day.day))-\(index).\(format.fileExtension)"
    }

    /// Appends images as files under one field name, each checked by its leading bytes (JPEG, PNG,
    /// GIF, WebP or HEIC) and sent with its own MIME type.
    ///
    /// Problems are reported when the request is sent, as ``NetworkError/invalidRequest(reason:)``:
    /// an empty array, or an element that is not an image (the reason names its index).
    /// - Parameters:
    ///   - images: the images' bytes.
    ///   - name: the field name, the same for each (`images`, or `images[]` for PHP-style servers).
    ///   - compressionQuality: between 0 and 1, re-encodes each image as JPEG at that quality on Apple
    ///     platforms (ImageIO: written for, not built or tested in this project's CI); `nil`, or
    ///     outside (0, 1), sends the images as they are. Elsewhere (Linux) images are always sent as
    ///     they are.
    ///   - date: the date in the file names.
    ///   - fileName: the file name of each image; by default ``defaultImageFileName(date:index:format:)``.
    public mutating func appendImages(
        _ images: [Data], name: String, compressionQuality: Double? = nil, date: Date = Date(),
        fileName: (Date, Int, ImageFormat) -> String = MultipartFormData.defaultImageFileName
    ) {
        guard !images.isEmpty else {
            record("no images to upload: the array of images is empty")
            return
        }
        for (index, image) in images.enumerated() {
            guard var format = ImageFormat(detecting: image) else {
                let start = image.prefix(4).map { String(format: "%02x", $0) }.joined(separator: " ")
                record("images[\(index)] is not a JPEG, PNG, GIF, WebP or HEIC image (\(image.count) bytes, starting \(start.isEmpty ? "with nothing" : start))")
                return
            }
            var bytes = image
            if let quality = compressionQuality, quality > 0, quality < 1, let recompressed = ImageRecompression.jpeg(image, quality: quality) {
                (bytes, format) = (recompressed, .jpeg)
            }
            append(bytes, name: name, fileName: fileName(date, index, format), mimeType: format.mimeType)
        }
    }
}
