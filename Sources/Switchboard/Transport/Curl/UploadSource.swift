#if canImport(Glibc)
import Foundation

/// Where the libcurl transport reads a request body from, as libcurl asks for it: bytes in memory, a
/// file read as it is sent, or a stream of a declared length. One per hop (a 307/308 or a challenge's
/// answer sends the body again from its start).
///
/// Used only on the loop thread.
final class UploadSource {
    private enum Origin {
        case memory(Data)
        case file(FileHandle)
        case stream(InputStream)
    }

    private let origin: Origin
    /// The body's size.
    let length: Int64?
    private var offset = 0
    private var sent: Int64 = 0

    init(_ body: TransferBody) throws(NetworkError) {
        length = body.length
        switch body {
        case .none:
            origin = .memory(Data())
        case .data(let data):
            origin = .memory(data)
        case .file(let url):
            do {
                origin = .file(try FileHandle(forReadingFrom: url))
            } catch {
                throw .invalidRequest(reason: "the body file \(url.path) could not be opened: \(error)")
            }
        case .stream(_, let open):
            origin = .stream(try TransferBody.openStream(open))
        }
    }

    deinit {
        switch origin {
        case .file(let handle): try? handle.close()
        case .stream(let stream): stream.close()
        case .memory: break
        }
    }

    /// Copies the next bytes into `buffer`: their count, 0 at the end, or why the body can't be sent.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, NetworkError> {
        let room = length.map { max(0, min(Int64(buffer.count), $0 - sent)) }.map(Int.init) ?? buffer.count
        guard room > 0, let base = buffer.baseAddress else { return .success(0) }
        var count = 0
        switch origin {
        case .memory(let data):
            count = min(room, data.count - offset)
            if count > 0 {
                data.withUnsafeBytes { bytes in buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])) }
                offset += count
            }
        case .file(let handle):
            do {
                let chunk = try handle.read(upToCount: room) ?? Data()
                chunk.copyBytes(to: base.assumingMemoryBound(to: UInt8.self), count: chunk.count)
                count = chunk.count
            } catch {
                return .failure(.invalidRequest(reason: "the body file could not be read: \(error)"))
            }
        case .stream(let stream):
            count = stream.read(base.assumingMemoryBound(to: UInt8.self), maxLength: room)
            if count < 0 { return .failure(.invalidRequest(reason: "the body stream failed: \(stream.streamError.map { "\($0)" } ?? "unknown error")")) }
        }
        sent += Int64(count)
        if count == 0, let length, sent < length {
            return .failure(.invalidRequest(reason: "the body ended after \(sent) of its \(length) bytes"))
        }
        return .success(count)
    }
}
#endif
