import Foundation

/// Assembles a ``MultipartFormData`` into the bytes sent: in memory up to a threshold, otherwise in a
/// temporary file, copying files and streams through a fixed-size buffer.
struct MultipartEncoder {
    /// An assembled body.
    struct Encoded: Sendable {
        /// What the transport sends: `.data` or `.file`.
        let body: TransferBody
        /// The temporary file behind a `.file` body (removed when released).
        let temporaryFile: TemporaryFile?
        /// The body's length.
        let length: Int64
    }

    /// The size of each read from a file or stream.
    static let bufferSize = 256 << 10

    let form: MultipartFormData
    /// Bodies up to this many bytes are assembled in memory.
    let memoryThreshold: Int
    /// Where a larger body's temporary file goes.
    let temporaryDirectory: URL

    /// A part made ready: its head's bytes and where its body comes from.
    private struct Prepared {
        let head: Data
        let content: MultipartFormData.Content
        let length: Int64
        let label: String
    }

    /// Assembles the body.
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` naming the part and the problem.
    func encode() throws(NetworkError) -> Encoded {
        if let problem = form.problem { throw .invalidRequest(reason: problem) }
        let parts = try form.parts.enumerated().map { index, part throws(NetworkError) in try prepare(part, index: index) }
        let closing = Data("--\(form.boundary)--\r\n".utf8)
        let length = parts.reduce(Int64(closing.count)) { $0 + Int64($1.head.count) + $1.length + 2 }
        if length <= Int64(memoryThreshold) {
            var data = Data(capacity: Int(length))
            for part in parts {
                data.append(part.head)
                try copy(part) { data.append($0) }
                data.append(Self.crlf)
            }
            data.append(closing)
            return Encoded(body: .data(data), temporaryFile: nil, length: length)
        }
        let file: TemporaryFile
        let handle: FileHandle
        do {
            file = try TemporaryFile(in: temporaryDirectory, prefix: "switchboard-multipart")
            handle = try FileHandle(forWritingTo: file.url)
        } catch {
            throw .invalidRequest(reason: "can't create a temporary file for the multipart body in \(temporaryDirectory.path): \(error)")
        }
        defer { try? handle.close() }
        do {
            for part in parts {
                try handle.write(contentsOf: part.head)
                var writeError: (any Error)?
                try copy(part) { chunk in
                    if writeError == nil { do { try handle.write(contentsOf: chunk) } catch { writeError = error } }
                }
                if let writeError { throw writeError }
                try handle.write(contentsOf: Self.crlf)
            }
            try handle.write(contentsOf: closing)
        } catch let error as NetworkError {
            throw error
        } catch {
            throw .invalidRequest(reason: "can't write the multipart body to \(file.url.path): \(error)")
        }
        return Encoded(body: .file(file.url), temporaryFile: file, length: length)
    }

    private static let crlf = Data("\r\n".utf8)

    /// Checks a part and builds its head.
    private func prepare(_ part: MultipartFormData.Part, index: Int) throws(NetworkError) -> Prepared {
        let label = "multipart part \(index) (\(part.name.debugDescription))"
        var mimeType = part.mimeType
        let length: Int64
        switch part.content {
        case .data(let data):
            length = Int64(data.count)
        case .stream(let declared, _, _):
            guard declared >= 0 else { throw .invalidRequest(reason: "\(label): a stream can't have a negative length") }
            length = declared
        case .file(let url):
            length = try Self.regularFileSize(url, label: label)
            if mimeType == nil {
                mimeType =
                    MediaTypes.type(forFileName: part.fileName ?? url.lastPathComponent)
                    ?? ImageFormat(detecting: Self.leadingBytes(of: url))?.mimeType
                    ?? MediaTypes.octetStream
            }
        }
        var head = "--\(form.boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(part.name))\""
        if let fileName = part.fileName { head += "; filename=\"\(Self.quoted(fileName))\"" }
        head += "\r\n"
        var headers = part.headers
        if let mimeType {
            headers["Content-Type"] = headers["Content-Type"] ?? mimeType
        }
        headers["Content-Disposition"] = nil  // ours, above
        if let invalid = headers.firstInvalidField { throw .invalidRequest(reason: "\(label): \(invalid.reason)") }
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        head += "\r\n"
        if form.boundaryIsChosen {
            var search = DelimiterSearch(Array("--\(form.boundary)".utf8))
            search.feed(Data(head.utf8.dropFirst(form.boundary.utf8.count + 2)))  // past its own delimiter
            if search.found { throw .invalidRequest(reason: "\(label): its name, file name or headers contain the boundary \(form.boundary.debugDescription)") }
        }
        return Prepared(head: Data(head.utf8), content: part.content, length: length, label: label)
    }

    /// Hands a part's body to `sink` in pieces of at most ``bufferSize`` bytes. With a boundary the
    /// caller chose, the bytes are searched for it on the way: a part that contains it would end early
    /// at the server.
    private func copy(_ part: Prepared, to sink: (Data) -> Void) throws(NetworkError) {
        guard form.boundaryIsChosen else { return try copyBytes(part, to: sink) }
        var search = DelimiterSearch(Array("--\(form.boundary)".utf8))
        try copyBytes(part) { chunk in
            search.feed(chunk)
            sink(chunk)
        }
        if search.found {
            throw .invalidRequest(reason: "\(part.label) contains the boundary \(form.boundary.debugDescription); choose another, or let the form choose a random one")
        }
    }

    private func copyBytes(_ part: Prepared, to sink: (Data) -> Void) throws(NetworkError) {
        switch part.content {
        case .data(let data):
            sink(data)
        case .file(let url):
            do {
                let handle = try FileHandle(forReadingFrom: url)
                defer { try? handle.close() }
                var copied: Int64 = 0
                while let chunk = try handle.read(upToCount: Self.bufferSize), !chunk.isEmpty {
                    copied += Int64(chunk.count)
                    guard copied <= part.length else { break }
                    sink(chunk)
                }
                guard copied == part.length else {
                    throw NetworkError.invalidRequest(reason: "\(part.label): the file \(url.path) changed size while it was read (\(part.length) bytes, then \(copied))")
                }
            } catch let error as NetworkError {
                throw error
            } catch {
                throw .invalidRequest(reason: "\(part.label): can't read \(url.path): \(error)")
            }
        case .stream(let length, _, let open):
            try copyStream(length: length, open: open, label: part.label, to: sink)
        }
    }

    private func copyStream(length: Int64, open: () throws -> InputStream, label: String, to sink: (Data) -> Void) throws(NetworkError) {
        let stream: InputStream
        do { stream = try open() } catch { throw .invalidRequest(reason: "\(label): the stream could not be opened: \(error)") }
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: Self.bufferSize)
        var copied: Int64 = 0
        while true {
            // Ask for one byte past the declared length, to notice a stream that gives too much.
            let wanted = Int(min(Int64(buffer.count), length - copied + 1))
            let count = stream.read(&buffer, maxLength: wanted)
            if count < 0 {
                throw .invalidRequest(reason: "\(label): the stream failed after \(copied) bytes: \(stream.streamError.map { "\($0)" } ?? "unknown error")")
            }
            if count == 0 { break }
            copied += Int64(count)
            guard copied <= length else {
                throw .invalidRequest(reason: "\(label): the stream gives more than the \(length) bytes it declared")
            }
            sink(Data(buffer[0..<count]))
        }
        guard copied == length else {
            throw .invalidRequest(reason: "\(label): the stream gave \(copied) of the \(length) bytes it declared")
        }
    }

    /// The size of a readable regular file.
    static func regularFileSize(_ url: URL, label: String) throws(NetworkError) -> Int64 {
        guard url.isFileURL else { throw .invalidRequest(reason: "\(label): \(url) is not a file URL") }
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        } catch {
            throw .invalidRequest(reason: "\(label): no file at \(url.path)")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw .invalidRequest(reason: "\(label): \(url.path) is not a regular file")
        }
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            throw .invalidRequest(reason: "\(label): \(url.path) is not readable")
        }
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The first bytes of a file (for recognising an image), empty when unreadable.
    private static func leadingBytes(of url: URL) -> Data {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return Data() }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 32)) ?? Data()
    }

    /// A name or file name for a quoted `Content-Disposition` parameter, as browsers write it: `"`, CR
    /// and LF percent-encoded, everything else (UTF-8 included) as it is.
    /// Byte by byte (`replacingASCII`): a quote followed by a combining mark once stayed as it was and
    /// ended the parameter early, letting a name add parameters of its own (`a"\u{301}; filename="x`;
    /// found by fuzzing).
    static func quoted(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }) else { return text }
        return text.replacingASCII { byte in
            switch byte {
            case 0x22: "%22"
            case 0x0D: "%0D"
            case 0x0A: "%0A"
            default: nil
            }
        }
    }
}

/// Finds a delimiter in bytes that come in chunks, also across the edge between two chunks.
struct DelimiterSearch {
    private let needle: [UInt8]
    /// The last `needle.count - 1` bytes seen: a match may start there.
    private var tail: [UInt8] = []
    private(set) var found = false

    init(_ needle: [UInt8]) {
        self.needle = needle
    }

    mutating func feed(_ chunk: Data) {
        guard !found, !needle.isEmpty else { return }
        var window = tail
        window.append(contentsOf: chunk)
        found = Self.contains(needle, in: window)
        tail = Array(window.suffix(needle.count - 1))
    }

    private static func contains(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        guard haystack.count >= needle.count, let first = needle.first else { return false }
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            guard let candidate = haystack[index...last].firstIndex(of: first) else { return false }
            if haystack[candidate..<(candidate + needle.count)].elementsEqual(needle) { return true }
            index = candidate + 1
        }
        return false
    }
}
