import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What makes two transfers the same: the method, the final URL (after filters and adapters), every
/// header field as it was set (names compared as they were written, so two spellings are two keys), the
/// body's bytes, and the transfer options that shape the answer (credentials, the size limit, the
/// redirect rules). Requests that differ in anything are never merged.
struct CoalescingKey: Hashable, Sendable {
    let method: String
    let url: String
    let headers: [String: String]
    let body: Data?
    let handlesCookies: Bool
    let credentials: Credentials?
    let maximumResponseSize: Int
    let redirects: RedirectRules
    /// A send never joins a transfer that waits longer (or shorter) for a byte than it would.
    let idleTimeout: TimeInterval?
    /// The hash of the method, the URL, the headers and the body (see ``hash(into:)``).
    private let digest: Int

    /// The key of a transfer that may be shared, or `nil` when it may not: a body from a file or a
    /// stream (read once per transfer) or a response body going to a file.
    init?(_ request: TransportRequest, options: TransferOptions) {
        guard request.destination == .memory, let url = request.urlRequest.url else { return nil }
        switch request.body {
        case .none: body = nil
        case .data(let data): body = data
        case .file, .stream: return nil
        }
        method = request.urlRequest.httpMethod ?? "GET"
        self.url = url.absoluteString
        headers = request.urlRequest.allHTTPHeaderFields ?? [:]
        handlesCookies = request.urlRequest.httpShouldHandleCookies
        credentials = options.credentials
        maximumResponseSize = options.maximumResponseSize
        redirects = options.redirects
        // As applied (NaN, which equals nothing, would make a key that never finds itself).
        idleTimeout = IdleTimeouts.effective(options.idleTimeout ?? request.urlRequest.timeoutInterval)
        var hasher = Hasher()
        hasher.combine(method)
        hasher.combine(self.url)
        hasher.combine(headers)
        hasher.combine(body)
        digest = hasher.finalize()
    }

    /// The hash, computed once (a send looks its key up, stores it and removes it): of the method, the
    /// URL, the header fields and the body, so sends to one URL that differ in a header (a trace id, a
    /// user's `Authorization`) don't pile up in one bucket. The transfer options are left out (they
    /// rarely differ for one URL); `==` compares every field.
    func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }
}
