#if canImport(Glibc)
import Foundation
import FoundationNetworking

/// The response head of a hop, as libcurl hands its lines over.
extension CurlTransfer {
    /// One header line of the current hop (a status line, a field, or the blank line that ends a head),
    /// as libcurl hands it over: bytes, with their CR LF. Parsed as bytes (Foundation's trimming costs
    /// microseconds per line on Linux). Returns false to stop the transfer.
    func header(_ line: UnsafeRawBufferPointer) -> Bool {
        // Once this hop's head has ended (the final one, or a redirect's or a challenge's), what comes
        // is a chunked body's trailer fields: not read, not parsed.
        if headComplete { return true }
        // A line of the head ends in CRLF. RFC 9112 §2.2 lets a client accept a bare LF; this package
        // refuses it, as FoundationNetworking does, so that both transports read a head alike.
        if head == nil, line.count < 2 || line[line.count - 2] != 0x0D || line[line.count - 1] != 0x0A {
            mode = .failed(.malformedResponse(reason: "a line of the response head ends in a bare LF, not CRLF"))
            return false
        }
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let bytes = UnsafeRawBufferPointer(rebasing: line[0..<end])
        if bytes.starts(with: Self.httpPrefix) {
            // "HTTP/1.1 200 OK", "HTTP/2 200": the version, spaces, three digits, then a space or the end.
            if let problem = ResponseFraming.statusLineProblem(bytes) {
                mode = .failed(.malformedResponse(reason: problem))
                return false
            }
            let space = bytes.firstIndex(of: 0x20) ?? bytes.endIndex
            var digits = space
            while digits < bytes.count, bytes[digits] == 0x20 { digits += 1 }
            var code = 0
            for digit in bytes[digits..<(digits + 3)] { code = code * 10 + Int(digit - 0x30) }
            status = code
            httpVersion = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<space]), as: UTF8.self)
            fields = []
            fields.reserveCapacity(16)
            return true
        }
        if !bytes.isEmpty {
            // An obsolete line folding (a line that starts with a space or tab) continues the field
            // before it; it is left out, as before.
            if bytes[0] == 0x20 || bytes[0] == 0x09 { return true }
            guard let colon = bytes.firstIndex(of: 0x3A) else {
                mode = .failed(.malformedResponse(reason: "a header line without a colon"))
                return false
            }
            // The name as sent: white space inside it or before the colon breaks the syntax (RFC 9112
            // §5.1; FoundationNetworking refuses it too, so both transports agree).
            let name = bytes[..<colon]
            guard ResponseFraming.isToken(name) else {
                mode = .failed(.malformedResponse(reason: ResponseFraming.nameProblem(name)))
                return false
            }
            let value = Self.trimmed(bytes[(colon + 1)...])
            fields.append(HTTPHeaders.Field(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
            return true
        }
        // The blank line: a 1xx head is followed by the real one.
        if (100..<200).contains(status) {
            status = 0
            fields = []
            return true
        }
        return headEnded()
    }

    static let httpPrefix = Array("HTTP/".utf8)

    /// A transfer that ended before its head was complete (a status line, then a close): the
    /// connection's failure, as a body cut short is.
    static let closedBeforeTheHead = NetworkError.transport(
        URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "the connection closed before the response head was complete"]))

    /// The bytes without leading and trailing spaces and tabs.
    static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }

    func headEnded() -> Bool {
        headComplete = true
        guard let url = current.url else { return false }
        if let problem = ResponseFraming.problem(in: fields) {
            mode = .failed(.malformedResponse(reason: problem))
            return false
        }
        // The proxy's own refusal of a request it was to forward: not the server's answer.
        if status == 407, let proxy = hopProxy {
            let reason = proxy.credentials == nil ? "it asks for credentials (407), and none were given" : "it refused the credentials given (407)"
            mode = .failed(.proxyFailed(reason: "the proxy \(proxy.address): \(reason)"))
            return false
        }
        // The HTTPURLResponse is made only where a rule or a callback needs one (a redirect, a
        // challenge, a head callback): a plain answer never pays for it (see ResponseHead).
        let parsed = ResponseHead(url: url, statusCode: status, httpVersion: httpVersion, fields: fields)
        storeCookies(url)
        if (300..<400).contains(status), let location = parsed.value("Location") {
            switch rules.redirect(from: current, response: parsed.response, to: URL(string: location, relativeTo: url)?.absoluteURL, followed: redirects) {
            case .deliver:
                break
            case .fail(let error):
                mode = .failed(error)
                return false
            case .follow(let next):
                redirects += 1
                let body: TransferBody = next.httpMethod == current.httpMethod ? currentBody : .none
                mode = .followWith(next, body)
                return true
            }
        } else if Self.redirectStatuses.contains(status), rules.options.redirects.maximumCount > 0 {
            // A redirect that says nowhere: a broken response (as URLSession reports it).
            mode = .failed(.malformedResponse(reason: "a \(status) redirect without a Location"))
            return false
        } else if status == 401, parsed.value("WWW-Authenticate")?.lowercased().hasPrefix("basic") == true {
            let decision = rules.answerChallenge(
                original: request.urlRequest, current: current, host: url.host ?? "",
                port: url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80), previousFailures: challenges, response: parsed.response
            )
            switch decision {
            case .fail(let error):
                mode = .failed(error)
                return false
            case .answer(let credentials):
                challenges += 1
                var retry = current
                retry.setValue(credentials.authorizationHeader, forHTTPHeaderField: "Authorization")
                mode = .followWith(retry, currentBody)
                return true
            }
        }
        if let refused = rules.admit(parsed, for: current, destination: request.destination) {
            mode = .failed(refused)
            return false
        }
        var offset: Int64 = 0
        if case .file(_, let from) = request.destination { offset = from }
        switch callbacks.head.map({ $0(parsed.response) }) ?? .proceed {
        case .fail(let error):
            mode = .failed(error)
            return false
        case .proceed: break
        case .writeFromStart: offset = 0
        }
        if case .file(let fileURL, _) = request.destination {
            do {
                file = try DestinationFile.open(fileURL, at: offset)
            } catch {
                mode = .failed(error)
                return false
            }
        }
        head = parsed
        expectedToReceive = TransferRules.expectedBodyLength(parsed, method: current.httpMethod)
        mode = .receiving
        return true
    }

    func storeCookies(_ url: URL) {
        guard let jar = cookieJar, current.httpShouldHandleCookies else { return }
        let lines = fields.filter { $0.name.caseInsensitiveEquals("Set-Cookie") }
        guard !lines.isEmpty else { return }
        let cookies = lines.flatMap { HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": $0.value], for: url) }
        jar.setCookies(cookies, for: url, mainDocumentURL: nil)
    }
}
#endif
