import Foundation

/// Puts a ``ServerResponse`` on the wire, head and body in as few `send` calls as possible.
enum ResponseWriter {
    /// Whether the connection may carry another request afterwards.
    enum Outcome {
        case keepOpen
        case close
        /// Close with a TCP reset.
        case reset
    }

    /// Writes `response` to `fd`.
    /// - Parameters:
    ///   - headOnly: `true` for `HEAD`: headers (with the length the body would have) but no body.
    ///   - closeAfter: `true` to send `Connection: close` and close afterwards.
    ///   - legacyClient: `true` for an HTTP/1.0 request, which needs `Connection: keep-alive` to stay open.
    ///   - stopSignal: Interrupts the pauses between chunks when the server stops.
    static func write(
        _ response: ServerResponse, to fd: Int32, headOnly: Bool, closeAfter: Bool,
        legacyClient: Bool = false, stopSignal: StopSignal
    ) -> Outcome {
        let announceKeepAlive = legacyClient && !closeAfter
        let noBody = headOnly || response.status == 204 || response.status == 304 || response.status < 200
        switch response.body {
        case .closeWithoutResponse:
            return .close

        case let .raw(bytes):
            _ = SocketIO.sendAll(fd, Array(bytes))
            return .close

        case let .rawDrip(pieces, interval), let .rawDripHeld(pieces, interval):
            for (index, piece) in pieces.enumerated() {
                if index > 0 && interval > 0 && !stopSignal.sleep(interval) { return .close }
                guard SocketIO.sendAll(fd, Array(piece)) else { return .close }
            }
            if case .rawDripHeld = response.body {
                while stopSignal.sleep(0.05) {
                    if SocketIO.peerClosed(fd) { break }
                }
            }
            return .close

        case .reset:
            return .reset

        case let .rawHeld(bytes):
            guard SocketIO.sendAll(fd, Array(bytes)) else { return .close }
            while stopSignal.sleep(0.05) {
                if SocketIO.peerClosed(fd) { break }
            }
            return .close

        case .never:
            while stopSignal.sleep(0.05) {
                if SocketIO.peerClosed(fd) { break }
            }
            return .close

        case let .data(data):
            // 204 and 1xx must not carry Content-Length; for 304 it would describe the cached body, so omit it.
            let lengthField = (response.status == 204 || response.status == 304 || response.status < 200) ? nil : data.count
            var bytes = head(
                response, contentLength: lengthField, chunked: false, close: closeAfter,
                keepAlive: announceKeepAlive, reserving: noBody ? 0 : data.count)
            if !noBody { bytes.append(contentsOf: data) }
            guard SocketIO.sendAll(fd, bytes) else { return .close }
            return closeAfter ? .close : .keepOpen

        case let .generated(length, abortAfter, pieceEnd, fill):
            let head = head(
                response, contentLength: length, chunked: false, close: closeAfter || abortAfter != nil,
                keepAlive: announceKeepAlive, reserving: 0)
            guard SocketIO.sendAll(fd, head) else { return .close }
            if noBody { return closeAfter ? .close : .keepOpen }
            let end = min(length, abortAfter ?? length)
            var buffer = [UInt8](repeating: 0, count: 256 << 10)
            var offset = 0
            while offset < end {
                var count = min(buffer.count, end - offset)
                if let pieceEnd, pieceEnd > offset { count = min(count, pieceEnd - offset) }
                let sent = buffer.withUnsafeMutableBytes { raw -> Bool in
                    let piece = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                    fill(offset, piece)
                    return SocketIO.sendAll(fd, UnsafeRawBufferPointer(piece))
                }
                guard sent, !stopSignal.isStopped else { return .close }
                offset += count
            }
            return closeAfter || abortAfter != nil ? .close : .keepOpen

        case let .abort(sending, declaredLength):
            var bytes = head(
                response, contentLength: declaredLength, chunked: false, close: true,
                keepAlive: false, reserving: sending.count)
            if !noBody { bytes.append(contentsOf: sending.prefix(max(0, declaredLength - 1))) }
            _ = SocketIO.sendAll(fd, bytes)
            return .close

        case let .chunks(chunks, interval) where legacyClient:
            // HTTP/1.0 has no chunked encoding: stream the pieces raw and mark the end by closing.
            var bytes = head(response, contentLength: nil, chunked: false, close: true, keepAlive: false, reserving: 0)
            for (index, chunk) in chunks.enumerated() where !noBody {
                if index > 0 && interval > 0 && !stopSignal.sleep(interval) { return .close }
                bytes.append(contentsOf: chunk)
                guard SocketIO.sendAll(fd, bytes) else { return .close }
                bytes.removeAll(keepingCapacity: true)
            }
            _ = SocketIO.sendAll(fd, bytes)
            return .close

        case let .chunks(chunks, interval):
            var bytes = head(
                response, contentLength: nil, chunked: !noBody, close: closeAfter,
                keepAlive: announceKeepAlive, reserving: 64)
            if noBody {
                guard SocketIO.sendAll(fd, bytes) else { return .close }
                return closeAfter ? .close : .keepOpen
            }
            var first = true
            for chunk in chunks where !chunk.isEmpty {
                if !first {
                    guard SocketIO.sendAll(fd, bytes) else { return .close }
                    bytes.removeAll(keepingCapacity: true)
                    if interval > 0 && !stopSignal.sleep(interval) { return .close }
                }
                first = false
                bytes.append(contentsOf: Array(String(chunk.count, radix: 16).utf8))
                bytes.append(contentsOf: crlf)
                bytes.append(contentsOf: chunk)
                bytes.append(contentsOf: crlf)
            }
            bytes.append(contentsOf: Array("0\r\n\r\n".utf8))
            guard SocketIO.sendAll(fd, bytes) else { return .close }
            return closeAfter ? .close : .keepOpen
        }
    }

    /// A bare status response, for rejections before any route ran.
    static func errorResponse(status: Int, message: String) -> ServerResponse {
        .json(["error": reasonPhrase(status).lowercased(), "message": message], status: status)
    }

    private static let crlf: [UInt8] = [13, 10]
    private static let managedHeaders: Set<String> = ["content-length", "transfer-encoding", "connection"]

    /// The status line and header block, ending with the empty line.
    static func head(
        _ response: ServerResponse, contentLength: Int?, chunked: Bool, close: Bool,
        keepAlive: Bool, reserving extra: Int
    ) -> [UInt8] {
        var text = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
        for (name, value) in response.headers where !managedHeaders.contains(name.lowercased()) {
            text += name
            text += ": "
            text += value
            text += "\r\n"
        }
        if chunked {
            text += "Transfer-Encoding: chunked\r\n"
        } else if let contentLength {
            text += "Content-Length: \(contentLength)\r\n"
        }
        if close {
            text += "Connection: close\r\n"
        } else if keepAlive {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + extra)
        bytes.append(contentsOf: text.utf8)
        return bytes
    }

    /// The standard reason phrase, or `"Status"` for codes without one.
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status"
        }
    }
}
