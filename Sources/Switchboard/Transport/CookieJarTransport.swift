import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that adds cookies from a jar to what it sends: the response cache asks it which cookies
/// a request will carry, so that a request with cookies is treated as authenticated (and keyed by them).
protocol CookieJarTransport {
    /// The jar whose cookies go on requests, or `nil` when none are added.
    var cookieJar: HTTPCookieStorage? { get }
}

extension URLSessionTransport: CookieJarTransport {}
#if canImport(Glibc)
extension CurlTransport: CookieJarTransport {}
#endif
