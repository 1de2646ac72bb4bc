import Foundation

/// The MIME type of a part, from what is known about it.
enum MediaTypes {
    /// The fallback for bytes of unknown type.
    static let octetStream = "application/octet-stream"

    /// The type for a file name's extension (case-insensitive), or `nil` when the extension is unknown.
    static func type(forFileName name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), dot != name.index(before: name.endIndex) else { return nil }
        return byExtension[name[name.index(after: dot)...].lowercased()]
    }

    /// The type of a part: from the file name's extension, else (for an image) from the leading bytes,
    /// else `application/octet-stream`.
    static func infer(fileName: String?, leadingBytes: Data) -> String {
        if let fileName, let known = type(forFileName: fileName) { return known }
        return ImageFormat(detecting: leadingBytes)?.mimeType ?? octetStream
    }

    private static let byExtension: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        "heic": "image/heic", "heif": "image/heif", "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff",
        "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon",
        "txt": "text/plain", "csv": "text/csv", "html": "text/html", "htm": "text/html", "css": "text/css",
        "xml": "application/xml", "json": "application/json", "js": "text/javascript", "md": "text/markdown",
        "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "wav": "audio/wav", "aac": "audio/aac",
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
        "doc": "application/msword", "xls": "application/vnd.ms-excel",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ]
}
