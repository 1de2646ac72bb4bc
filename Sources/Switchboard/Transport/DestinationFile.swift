import Foundation

/// Opens a ``ResponseDestination/file(_:offset:)`` for writing, the same way for every transport: the
/// file is created if missing, cut to `offset` bytes and positioned there; an offset past its end is
/// ``NetworkError/invalidRequest(reason:)``, a file that can't be created or opened a transport error.
package enum DestinationFile {
    package static func open(_ url: URL, at offset: Int64) throws(NetworkError) -> FileHandle {
        let start = max(0, offset)
        if !FileManager.default.fileExists(atPath: url.path) {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw .transport(URLError(.cannotCreateFile, userInfo: [NSLocalizedDescriptionKey: "cannot create \(url.path)"]))
            }
        }
        do {
            let handle = try FileHandle(forWritingTo: url)
            let size = try handle.seekToEnd()
            if UInt64(start) > size {
                try? handle.close()
                throw NetworkError.invalidRequest(reason: "the download offset \(start) is past the end of \(url.lastPathComponent) (\(size) bytes)")
            }
            try handle.truncate(atOffset: UInt64(start))
            try handle.seek(toOffset: UInt64(start))
            return handle
        } catch let error as NetworkError {
            throw error
        } catch {
            throw .transport(URLError(.cannotOpenFile, userInfo: [NSLocalizedDescriptionKey: "cannot open \(url.path): \(error)", NSUnderlyingErrorKey: error]))
        }
    }
}
