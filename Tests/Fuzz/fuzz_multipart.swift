// Target: MultipartEncoder (Sources/Switchboard/Transfers/Multipart/), read back by the
// loopback server's parser (Sources/LoopbackServer/MultipartParser.swift), which the upload tests
// trust: a round trip.
// Input: byte 0 holds flags (bit 0: a boundary of the input's choosing, from the first record;
// bit 1: data parts as streams; bit 2: assembled in a temporary file, not in memory). The rest is
// records split at 0x1E, each a part: fields split at 0x1F: name, file name (absent when empty),
// MIME type (absent when empty), then the bytes.
// Checks: no trap; the encoder either fails with .invalidRequest (only for a boundary of the input's
// choosing, a header it can't send, or ...) or produces a body in which the server finds every part
// with its name and file name (as browsers write them: `"`, CR and LF percent-encoded), its type and
// exactly its bytes; the body's length is the one announced.
import Foundation

private struct Spec {
    var name: String
    var fileName: String?
    var mimeType: String?
    var bytes: Data
}

/// A name or file name as the server reads it back (the HTML form-data encoding), byte by byte
/// (Foundation's `replacingOccurrences` misses a quote followed by a combining mark).
private func browserEncoded(_ text: String) -> String {
    var bytes: [UInt8] = []
    for byte in text.utf8 {
        switch byte {
        case 0x22: bytes += Array("%22".utf8)
        case 0x0D: bytes += Array("%0D".utf8)
        case 0x0A: bytes += Array("%0A".utf8)
        default: bytes.append(byte)
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

private func split(_ bytes: ArraySlice<UInt8>, at separator: UInt8) -> [ArraySlice<UInt8>] {
    bytes.split(separator: separator, omittingEmptySubsequences: false)
}

private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-fuzz-multipart-\(getpid())")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let buffer = UnsafeBufferPointer(start: data, count: size)
    let flags = buffer[0]
    var records = split(ArraySlice(buffer[1...]), at: 0x1E)
    var form: MultipartFormData
    if flags & 1 != 0 {
        let chosen = String(decoding: records.removeFirst(), as: UTF8.self)
        form = MultipartFormData(boundary: chosen)
    } else {
        form = MultipartFormData()
    }
    var specs: [Spec] = []
    for record in records.prefix(8) {
        let fields = split(record, at: 0x1F)
        let name = String(decoding: fields[0], as: UTF8.self)
        let fileName = fields.count > 1 && !fields[1].isEmpty ? String(decoding: fields[1], as: UTF8.self) : nil
        let mimeType = fields.count > 2 && !fields[2].isEmpty ? String(decoding: fields[2], as: UTF8.self) : nil
        let bytes = fields.count > 3 ? Data(fields[3...].joined(separator: [0x1F])) : Data()
        specs.append(Spec(name: name, fileName: fileName, mimeType: mimeType, bytes: bytes))
        if flags & 2 != 0 {
            form.append(streamOfLength: Int64(bytes.count), name: name, fileName: fileName, mimeType: mimeType) { InputStream(data: bytes) }
        } else {
            form.append(bytes, name: name, fileName: fileName, mimeType: mimeType)
        }
    }
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let encoder = MultipartEncoder(form: form, memoryThreshold: flags & 4 != 0 ? 0 : .max, temporaryDirectory: directory)
    let encoded: MultipartEncoder.Encoded
    do {
        encoded = try encoder.encode()
    } catch {
        guard case .invalidRequest(let reason) = error else {
            expect("error", false, "encode threw \(error), not .invalidRequest")
            return 0
        }
        // A random boundary and types without control characters always encode.
        let plainTypes = specs.allSatisfy { spec in spec.mimeType.map { !$0.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } } ?? true }
        expect("refused", flags & 1 != 0 || !plainTypes, "refused a form with a random boundary: \(reason)")
        return 0
    }
    let body: Data
    switch encoded.body {
    case .data(let bytes): body = bytes
    case .file(let url): body = (try? Data(contentsOf: url)) ?? Data()
    default:
        expect("body", false, "an assembled body that is neither data nor a file")
        return 0
    }
    expect("length", Int64(body.count) == encoded.length, "announced \(encoded.length) bytes, assembled \(body.count)")
    guard let boundary = MultipartParser.boundary(fromContentType: form.contentType) else {
        expect("content-type", false, "the server finds no boundary in \(form.contentType.debugDescription)")
        return 0
    }
    expect("content-type", boundary == form.boundary, "the server reads boundary \(boundary.debugDescription) from \(form.contentType.debugDescription)")
    let parsed = MultipartParser.parse(body, boundary: boundary)
    expect("count", parsed.count == specs.count, "\(specs.count) parts sent, \(parsed.count) parsed from \(String(decoding: body.prefix(400), as: UTF8.self).debugDescription)")
    for (index, (spec, part)) in zip(specs, parsed).enumerated() {
        expect("name", part.name == browserEncoded(spec.name), "part \(index): name \(spec.name.debugDescription) read as \(part.name.debugDescription)")
        expect(
            "filename", part.fileName == spec.fileName.map(browserEncoded),
            "part \(index): file name \(String(describing: spec.fileName)) read as \(String(describing: part.fileName))")
        if let type = spec.mimeType {
            expect(
                "type", part.contentType == type.trimmingCharacters(in: .whitespaces),
                "part \(index): type \(type.debugDescription) read as \(String(describing: part.contentType))")
        }
        expect("bytes", part.data == spec.bytes, "part \(index): \(spec.bytes.count) bytes sent, \(part.data.count) read")
    }
    return 0
}
