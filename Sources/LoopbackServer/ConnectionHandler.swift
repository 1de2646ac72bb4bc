import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Serves one connection on its own thread: reads requests in a keep-alive loop, routes them, writes
/// the responses. The caller closes the socket afterwards.
struct ConnectionHandler {
    let fd: Int32
    let core: ServerCore

    /// Serves until the connection ends; returns whether it must end with a reset.
    @discardableResult
    func run() -> Bool {
        var reader = ConnectionReader(fd: fd)
        while !core.stopSignal.isStopped {
            let head: HTTPRequestParser.Head
            let body: Data
            do {
                guard let parsed = try HTTPRequestParser.readHead(from: &reader) else { return false }
                head = parsed
                let path = String(head.target.prefix { $0 != "?" })
                if let early = core.earlyAnswers.withLock({ $0[path] }) {
                    // Answered while the client may still be sending its body (413 mid-upload), then closed.
                    core.recordHit(path: path)
                    _ = ResponseWriter.write(early, to: fd, headOnly: false, closeAfter: true, stopSignal: core.stopSignal)
                    return false
                }
                let sink = core.sink(method: head.method, target: head.target)
                let framing = try HTTPRequestParser.framing(of: head, streamed: sink != nil)
                if framing != .none,
                    head.header("Expect")?.lowercased().contains("100-continue") == true,
                    head.version == "HTTP/1.1"
                {
                    guard SocketIO.sendAll(fd, Self.continueLine) else { return false }
                }
                if let sink {
                    // A sink route reads the body as it arrives, into a digest.
                    var request = ServerRequest(
                        method: head.method, target: head.target, version: head.version,
                        headers: head.headers, body: Data(), stopSignal: core.stopSignal)
                    var digest = UploadDigest(contentType: request.header("Content-Type"))
                    let pause = core.slowBodies.withLock { $0[path] }
                    try HTTPRequestParser.streamBody(framing, from: &reader) { piece in
                        digest.update(piece)
                        if let pause { _ = core.stopSignal.sleep(pause) }
                    }
                    core.recordHit(path: request.path)
                    request.pathParameters = [:]
                    let outcome = ResponseWriter.write(
                        sink(request, digest), to: fd, headOnly: head.method == "HEAD",
                        closeAfter: head.wantsClose, legacyClient: head.version == "HTTP/1.0",
                        stopSignal: core.stopSignal)
                    guard case .keepOpen = outcome else { return outcome == .reset }
                    continue
                }
                body = try HTTPRequestParser.readBody(framing, from: &reader)
            } catch let rejection as HTTPRequestParser.Rejection {
                let response = ResponseWriter.errorResponse(status: rejection.status, message: rejection.message)
                _ = ResponseWriter.write(response, to: fd, headOnly: false, closeAfter: true, stopSignal: core.stopSignal)
                return false
            } catch {
                return false  // the peer closed mid-request
            }

            var request = ServerRequest(
                method: head.method, target: head.target, version: head.version,
                headers: head.headers, body: body, stopSignal: core.stopSignal)
            core.recordHit(path: request.path)
            let response = respond(to: &request)
            let outcome = ResponseWriter.write(
                response, to: fd, headOnly: head.method == "HEAD",
                closeAfter: head.wantsClose, legacyClient: head.version == "HTTP/1.0",
                stopSignal: core.stopSignal)
            switch outcome {
            case .keepOpen: continue
            case .close: return false
            case .reset: return true
            }
        }
        return false
    }

    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private func respond(to request: inout ServerRequest) -> ServerResponse {
        core.respond(to: &request)
    }
}
