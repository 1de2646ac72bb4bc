#if canImport(Glibc)
import Foundation
import FoundationNetworking

/// The body of a hop, the upload it reads, and the C callbacks libcurl calls (inside
/// curl_multi_perform, on the loop thread).
extension CurlTransfer {
    /// Writes to the file in pieces of this size, not per chunk libcurl hands over.
    static let filePiece = 1 << 20

    /// Body bytes of the current hop. Returns false to stop the transfer.
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch mode {
        case .followWith: return true  // a redirect's or a challenge's body: not needed
        case .head, .failed: return false
        case .receiving: break
        }
        if firstByte == nil { firstByte = Date().timeIntervalSince(start) }
        bytesReceived += Int64(bytes.count)
        if file != nil {
            pending.append(contentsOf: bytes)
            if pending.count >= Self.filePiece, let failure = flush() {
                mode = .failed(failure)
                return false
            }
        } else {
            if let tooLarge = rules.admit(receivedBytes: bytesReceived) {
                mode = .failed(tooLarge)
                return false
            }
            data.append(contentsOf: bytes)
        }
        reportProgress()
        return true
    }

    /// Writes what waits for the file.
    func flush() -> NetworkError? {
        guard let file, !pending.isEmpty else { return nil }
        // Written once, whatever happens, and nothing after a failed write: the file holds a prefix of
        // the body (a resume reads its offset from it); the same bytes again, or later ones after a
        // gap, would corrupt it.
        defer { pending.removeAll(keepingCapacity: true) }
        guard !writeFailed else { return nil }
        do {
            try file.write(contentsOf: pending)
            return nil
        } catch {
            writeFailed = true
            return .transport(URLError(.cannotWriteToFile, userInfo: [NSLocalizedDescriptionKey: "\(error)"]))
        }
    }

    func reportProgress() {
        guard let progress = callbacks.progress else { return }
        progress(
            TransferProgress(
                bytesSent: bytesSent, expectedBytesToSend: upload?.length,
                bytesReceived: bytesReceived, expectedBytesToReceive: expectedToReceive
            ))
    }

    /// Fills libcurl's upload buffer. Returns the bytes written, 0 at the end, or `readAbort`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let upload else { return 0 }
        switch upload.read(into: buffer) {
        case .success(let count):
            bytesSent += Int64(count)
            if count > 0 { reportProgress() }
            return count
        case .failure(let error):
            mode = .failed(error)
            return CurlConstant.readAbort
        }
    }

    // MARK: C callbacks (called by libcurl inside curl_multi_perform, on the loop thread)

    static let onHeader: CurlLibrary.DataCallback = { buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
        return transfer.header(UnsafeRawBufferPointer(start: buffer, count: length)) ? length : 0
    }

    static let onBody: CurlLibrary.DataCallback = { buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
        return transfer.body(UnsafeRawBufferPointer(start: buffer, count: length)) ? length : 0
    }

    static let onTransferInfo: CurlLibrary.TransferInfoCallback = { context, _, _, _, uploaded in
        guard let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        if uploaded != transfer.reportedUpload {
            transfer.reportedUpload = uploaded
            transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
        }
        return 0
    }

    static let onRead: CurlLibrary.DataCallback = { buffer, size, count, context in
        guard let buffer, let context else { return CurlConstant.readAbort }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
        return transfer.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
    }
}
#endif
