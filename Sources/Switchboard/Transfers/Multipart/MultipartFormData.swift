import Foundation

/// A `multipart/form-data` body (RFC 7578): form fields, and files from memory, from disk or from a
/// stream, each with a name, a file name and a MIME type. The form of AFNetworking's
/// `constructingBodyWithBlock` and YTKNetwork's `constructingBodyBlock`.
///
/// ```swift
/// struct UploadImage: Request {
///     let jpeg: Data
///     var method: HTTPMethod { .post }
///     var path: String { "/iphone/image/upload" }
///     var body: RequestBody? {
///         .multipart { form in
///             form.append(jpeg, name: "image", fileName: "image.jpg", mimeType: "image/jpeg")
///         }
///     }
/// }
/// ```
///
/// Building a form only records its parts; the bytes are read when the request is sent. A body up to
/// ``Configuration/multipartMemoryThreshold`` (10 MiB by default) is assembled in memory; a larger one
/// is written to a temporary file (owner-only, removed when the send ends) and uploaded from there, so
/// memory stays bounded whatever the size. Either way it is sent with a `Content-Length`.
///
/// A problem found while sending — a file that is not a readable regular file, a stream that gives
/// more or fewer bytes than it said, a header with a CR or LF, an image that isn't one — fails the send
/// with ``NetworkError/invalidRequest(reason:)`` before anything goes on the wire.
public struct MultipartFormData: Sendable, Hashable {
    /// The boundary between parts: random unless given.
    public let boundary: String
    /// The parts, in order.
    public private(set) var parts: [Part] = []
    /// A problem found while appending (reported when the request is sent).
    var problem: String?

    /// Whether the boundary was given rather than random: then the parts' bytes are searched for it as
    /// they are sent (a random one, 128 bits of it, can't occur by chance).
    let boundaryIsChosen: Bool

    /// Creates an empty form.
    /// - Parameter boundary: the boundary; by default a random one (`switchboard.boundary.` and 32 hex
    ///   digits). A boundary you choose must be 1–70 characters of RFC 2046's set (letters, digits and
    ///   `'()+_,-./:=?` and space, not last), and no part may contain it: otherwise sending fails with
    ///   ``NetworkError/invalidRequest(reason:)``.
    public init(boundary: String? = nil) {
        self.boundary = boundary ?? Self.randomBoundary()
        boundaryIsChosen = boundary != nil
        if let boundary, let why = Self.problem(withBoundary: boundary) {
            problem = "the multipart boundary \(boundary.debugDescription) \(why)"
        }
    }

    /// The `Content-Type` of the body: `multipart/form-data; boundary=…` (the boundary quoted when it
    /// has characters a bare parameter value can't).
    public var contentType: String {
        let bare = boundary.utf8.allSatisfy { Self.isTokenByte($0) }
        return "multipart/form-data; boundary=" + (bare ? boundary : "\"\(boundary)\"")
    }

    /// Why `boundary` can't be used (RFC 2046 §5.1.1), or `nil`.
    static func problem(withBoundary boundary: String) -> String? {
        let bytes = Array(boundary.utf8)
        guard (1...70).contains(bytes.count) else { return "must have 1 to 70 characters, not \(bytes.count)" }
        guard bytes.allSatisfy(isBoundaryByte) else { return "may have only letters, digits, space and '()+_,-./:=?" }
        guard bytes.last != 0x20 else { return "may not end with a space" }
        return nil
    }

    private static func isBoundaryByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"): true
        default: "'()+_,-./:=? ".utf8.contains(byte)
        }
    }

    /// A byte a parameter value may have without quotes (RFC 2045's token: not a space or tspecial).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        isBoundaryByte(byte) && !"()/:=? ,".utf8.contains(byte)
    }

    /// Appends a form field.
    public mutating func append(_ value: String, name: String) {
        parts.append(Part(name: name, fileName: nil, mimeType: nil, headers: [:], content: .data(Data(value.utf8))))
    }

    /// Appends bytes: a file when `fileName` is given (its MIME type, when not given, inferred from the
    /// file name's extension, then for images from the leading bytes, else `application/octet-stream`),
    /// otherwise a field without a type unless `mimeType` is given.
    /// - Parameters:
    ///   - data: the bytes.
    ///   - name: the field name.
    ///   - fileName: the file name the server sees.
    ///   - mimeType: the part's `Content-Type`.
    ///   - headers: more header fields for the part.
    public mutating func append(_ data: Data, name: String, fileName: String? = nil, mimeType: String? = nil, headers: HTTPHeaders = [:]) {
        let type = mimeType ?? fileName.map { MediaTypes.infer(fileName: $0, leadingBytes: data.prefix(32)) }
        parts.append(Part(name: name, fileName: fileName, mimeType: type, headers: headers, content: .data(data)))
    }

    /// Appends a file from disk, read when the request is sent (never all at once for a large body).
    /// - Parameters:
    ///   - fileURL: a readable regular file.
    ///   - name: the field name.
    ///   - fileName: the file name the server sees; by default the URL's last path component.
    ///   - mimeType: the part's `Content-Type`; by default inferred from the file name, then from the
    ///     file's leading bytes for an image, else `application/octet-stream`.
    ///   - headers: more header fields for the part.
    public mutating func append(fileAt fileURL: URL, name: String, fileName: String? = nil, mimeType: String? = nil, headers: HTTPHeaders = [:]) {
        parts.append(Part(name: name, fileName: fileName ?? fileURL.lastPathComponent, mimeType: mimeType, headers: headers, content: .file(fileURL)))
    }

    /// Appends `length` bytes from a stream. `open` is called each time the body is assembled and
    /// must return a new stream over the same bytes.
    /// - Parameters:
    ///   - length: the number of bytes the stream gives; a different number fails the send.
    ///   - name: the field name.
    ///   - fileName: the file name the server sees, if a file.
    ///   - mimeType: the part's `Content-Type`; by default inferred from `fileName`, else
    ///     `application/octet-stream` for a file and none for a field.
    ///   - headers: more header fields for the part.
    ///   - open: makes the stream.
    public mutating func append(
        streamOfLength length: Int64, name: String, fileName: String? = nil, mimeType: String? = nil, headers: HTTPHeaders = [:],
        open: @escaping @Sendable () throws -> InputStream
    ) {
        let type = mimeType ?? fileName.map { MediaTypes.type(forFileName: $0) ?? MediaTypes.octetStream }
        parts.append(Part(name: name, fileName: fileName, mimeType: type, headers: headers, content: .stream(length: length, id: UUID(), open: open)))
    }

    /// Appends each parameter as a field, with the key names of form encoding (`user[name]`, `tags[]`),
    /// keys sorted. A value that is not an object is recorded as a problem.
    public mutating func append(parameters: JSON) {
        do {
            for field in try URLEncodedForm.fields(parameters) { append(field.value, name: field.name) }
        } catch {
            record("the parameters of a multipart form must be a JSON object")
        }
    }

    /// This form with `parameters` as fields before its own parts (what a request's parameters become
    /// with a multipart body).
    func withFields(from parameters: JSON) -> MultipartFormData {
        var form = self
        form.parts = []
        form.append(parameters: parameters)
        form.parts += parts
        return form
    }

    /// Whether assembling the body may take long enough to keep it off the sender's thread: it reads
    /// files or streams, or has more than a megabyte in memory.
    var mayBeSlowToAssemble: Bool {
        var inMemory = 0
        for part in parts {
            switch part.content {
            case .data(let data): inMemory += data.count
            case .file, .stream: return true
            }
        }
        return inMemory > 1 << 20
    }

    /// The whole body in memory (empty when it can't be assembled).
    func assembledInMemory() -> Data {
        let encoder = MultipartEncoder(form: self, memoryThreshold: .max, temporaryDirectory: FileManager.default.temporaryDirectory)
        if case .data(let data)? = try? encoder.encode().body { return data }
        return Data()
    }

    /// Records the first problem found while building; sending fails with it.
    mutating func record(_ problem: String) {
        if self.problem == nil { self.problem = problem }
    }

    /// A random boundary, 128 bits of it.
    public static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64, low = generator.next() as UInt64
        return "switchboard.boundary." + hex(high) + hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

extension MultipartFormData {
    /// One part of a form.
    public struct Part: Sendable, Hashable {
        /// The field name.
        public let name: String
        /// The file name, for a file.
        public let fileName: String?
        /// The part's `Content-Type`; for a file from disk without one, inferred when it is sent.
        public let mimeType: String?
        /// More header fields.
        public let headers: HTTPHeaders
        /// Where the bytes come from.
        public let content: Content
    }

    /// Where a part's bytes come from.
    public enum Content: Sendable, Hashable {
        /// Bytes in memory.
        case data(Data)
        /// A file, read when sent.
        case file(URL)
        /// A stream of `length` bytes (`id` tells two stream parts apart: streams can't be compared).
        case stream(length: Int64, id: UUID, open: @Sendable () throws -> InputStream)

        /// Equal bytes, the same file, or the same stream part.
        public static func == (lhs: Content, rhs: Content) -> Bool {
            switch (lhs, rhs) {
            case (.data(let a), .data(let b)): a == b
            case (.file(let a), .file(let b)): a == b
            case (.stream(let a, let x, _), .stream(let b, let y, _)): a == b && x == y
            default: false
            }
        }

        /// Hashes what `==` compares.
        public func hash(into hasher: inout Hasher) {
            switch self {
            case .data(let data): hasher.combine(0); hasher.combine(data)
            case .file(let url): hasher.combine(1); hasher.combine(url)
            case .stream(let length, let id, _): hasher.combine(2); hasher.combine(length); hasher.combine(id)
            }
        }
    }
}
