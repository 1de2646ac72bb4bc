#if canImport(Glibc)
import Foundation

/// libcurl's result codes as the same ``NetworkError`` cases the URLSession transport reports.
enum CurlErrors {
    static func map(_ code: Int32, message: String, curl: CurlLibrary, idleTimeout: TimeInterval, received: Int64, expected: Int64?) -> NetworkError {
        let text = message.isEmpty ? curl.describe(code) : message
        let lowered = text.lowercased()
        func failure(_ urlCode: URLError.Code) -> NetworkError {
            .transport(URLError(urlCode, userInfo: [NSLocalizedDescriptionKey: "\(text) (libcurl \(code))"]))
        }
        switch code {
        case CurlConstant.operationTimedOut:
            return .idleTimeout(after: idleTimeout)
        case CurlConstant.unsupportedProtocol:
            // Also what libcurl says of a response that is not HTTP/1.x or 2 ("HTTP/0.9", "Unsupported
            // HTTP version"): a bad response, not a bad URL.
            return failure(lowered.contains("http/0.9") || lowered.contains("http version") ? .badServerResponse : .unsupportedURL)
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
        case CurlConstant.sslConnectError, CurlConstant.sslCertProblem, CurlConstant.sslCACertBadFile:
            return failure(.secureConnectionFailed)
        case CurlConstant.peerFailedVerification:
            return failure(.serverCertificateUntrusted)
        case CurlConstant.partialFile, CurlConstant.gotNothing:
            return failure(.networkConnectionLost)
        case CurlConstant.weirdServerReply, CurlConstant.http2, CurlConstant.http2Stream:
            return failure(lowered.contains("chunk") ? .cannotParseResponse : .badServerResponse)
        case CurlConstant.sendError, CurlConstant.recvError:
            if lowered.contains("chunk") { return failure(.cannotParseResponse) }
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
}
#endif
