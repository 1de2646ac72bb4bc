#if canImport(Glibc)
import Foundation

/// libcurl's result codes as the same ``NetworkError`` cases the URLSession transport reports.
enum CurlErrors {
    static func map(_ code: Int32, message: String, curl: CurlLibrary, idleTimeout: TimeInterval, received: Int64, expected: Int64?, host: String = "") -> NetworkError {
        let text = message.isEmpty ? curl.describe(code) : message
        let lowered = text.lowercased()
        if let check = trustCheck(code, lowered) {
            return .serverTrustFailed(TrustFailure(host: host, check: check, reason: "\(text) (libcurl \(code))"))
        }
        if code == CurlConstant.sslCACertBadFile {
            return .unsupportedTrustPolicy(reason: "libcurl could not load the CA certificates (the policy's, or the system's store): \(text) (libcurl \(code))")
        }
        func failure(_ urlCode: URLError.Code) -> NetworkError {
            .transport(URLError(urlCode, userInfo: [NSLocalizedDescriptionKey: "\(text) (libcurl \(code))"]))
        }
        let malformed = NetworkError.malformedResponse(reason: "\(text) (libcurl \(code))")
        switch code {
        case CurlConstant.operationTimedOut:
            return .idleTimeout(after: idleTimeout)
        case CurlConstant.unsupportedProtocol:
            // The URL's scheme was checked before the hop (http or https), so this is a scheme libcurl
            // was built without ("Protocol "https" not supported or disabled"), or what libcurl says of
            // a response that is not HTTP/1.x or 2 ("HTTP/0.9", "Unsupported HTTP version", a status
            // line whose code has four digits): a malformed response, not a bad URL.
            return lowered.hasPrefix("protocol \"") || lowered.contains("not supported or disabled") ? failure(.unsupportedURL) : malformed
        case CurlConstant.urlMalformat:
            return failure(.badURL)
        case CurlConstant.couldntResolveHost, CurlConstant.couldntResolveProxy:
            return failure(.cannotFindHost)
        case CurlConstant.couldntConnect:
            return failure(.cannotConnectToHost)
        case CurlConstant.badContentEncoding:
            return failure(.cannotDecodeContentData)
        case CurlConstant.tooManyRedirects:
            return failure(.httpTooManyRedirects)
        case CurlConstant.sslConnectError:
            return failure(.secureConnectionFailed)
        case CurlConstant.partialFile, CurlConstant.gotNothing:
            return failure(.networkConnectionLost)
        case CurlConstant.weirdServerReply, CurlConstant.http2:
            return malformed
        case CurlConstant.http2Stream:
            // A stream reset (REFUSED_STREAM, CANCEL) or a GOAWAY is the connection's failure, worth
            // retrying; a PROTOCOL_ERROR is the server's.
            return lowered.contains("protocol_error") ? malformed : failure(.networkConnectionLost)
        case CurlConstant.sendError, CurlConstant.recvError:
            if lowered.contains("chunk") { return malformed }
            if lowered.contains("decod") || lowered.contains("inflat") || lowered.contains("encoding") { return failure(.cannotDecodeContentData) }
            return failure(.networkConnectionLost)
        case CurlConstant.writeError:
            if lowered.contains("decod") || lowered.contains("inflat") || lowered.contains("unencod") { return failure(.cannotDecodeContentData) }
            return failure(.cannotWriteToFile)
        case CurlConstant.readError, CurlConstant.abortedByCallback, CurlConstant.sendFailRewind:
            return failure(.cannotOpenFile)
        default:
            if let expected, received < expected { return failure(.networkConnectionLost) }
            return failure(.unknown)
        }
    }

    /// The failure of a hop that went through `proxy` when it was the proxy's (it refused the
    /// connection, its name didn't resolve, it refused the `CONNECT` tunnel or its credentials), or
    /// `nil` when it was the server's.
    static func proxyFailure(_ code: Int32, message: String, curl: CurlLibrary, proxy: String) -> NetworkError? {
        let text = message.isEmpty ? curl.describe(code) : message
        let lowered = text.lowercased()
        switch code {
        case CurlConstant.couldntResolveProxy, CurlConstant.couldntConnect, CurlConstant.proxyHandshake:
            break
        default:
            // Only libcurl's own words for a tunnel the proxy refused ("CONNECT tunnel failed, response
            // 407", "Received HTTP code 407 from proxy after CONNECT", "Proxy CONNECT aborted").
            guard lowered.contains("connect tunnel failed") || lowered.contains("from proxy after connect") || lowered.contains("proxy connect aborted") else {
                return nil
            }
        }
        // The proxy answered, but couldn't reach the server: the server's failure, worth retrying.
        if ["response 502", "response 503", "response 504", "code 502", "code 503", "code 504"].contains(where: lowered.contains) {
            return .transport(URLError(.cannotConnectToHost, userInfo: [NSLocalizedDescriptionKey: "the proxy \(proxy) could not reach the server: \(text) (libcurl \(code))"]))
        }
        let detail = lowered.contains("407") ? "it refused the credentials or asked for some (407): \(text)" : text
        return .proxyFailed(reason: "the proxy \(proxy): \(detail) (libcurl \(code))")
    }

    /// Which trust check a TLS failure is (from libcurl's code and OpenSSL's words), or `nil` when it
    /// isn't one: a handshake that failed for another reason (a server that doesn't speak TLS) stays
    /// a transport error.
    static func trustCheck(_ code: Int32, _ lowered: String) -> TrustFailure.Check? {
        switch code {
        case CurlConstant.peerFailedVerification:
            return .ofPeerVerification(lowered)
        case CurlConstant.sslPinnedKeyMismatch:
            return .publicKeyPin
        case CurlConstant.sslCertProblem:
            return .clientIdentity
        case CurlConstant.sslClientCert:
            return .clientCertificate
        case CurlConstant.sslConnectError, CurlConstant.recvError, CurlConstant.sendError:
            if let check = TrustFailure.Check.named(inTLSMessage: lowered), check == .clientCertificate { return check }
            if code == CurlConstant.sslConnectError, lowered.contains("private key") || lowered.contains("key values mismatch") { return .clientIdentity }
            // The server refused the handshake without saying why (TLS 1.2 servers say this of a
            // missing client certificate too, and of no cipher in common).
            if code == CurlConstant.sslConnectError, lowered.contains("alert handshake failure") { return .handshake }
            return nil
        default:
            return nil
        }
    }
}
#endif
