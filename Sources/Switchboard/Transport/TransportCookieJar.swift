import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which jar a transport adds cookies from: the response cache asks, so that a request the jar will
/// put cookies on is treated as authenticated (and keyed by them).
enum TransportCookieJar {
    /// The jar whose cookies `transport` puts on requests, or `nil` when it adds none (or is not one of
    /// the package's transports). Casts to the concrete classes: a cast to a protocol existential cost a
    /// third of a microsecond per send.
    static func jar(of transport: (any Transport)?) -> HTTPCookieStorage? {
        if let session = transport as? URLSessionTransport { return session.cookieJar }
        #if canImport(Glibc)
        if let curl = transport as? CurlTransport { return curl.cookieJar }
        #endif
        return nil
    }
}
