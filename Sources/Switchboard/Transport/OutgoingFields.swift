import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the URLSession transport readies each hop's header fields for FoundationNetworking: the first
/// hop (`SessionDelegate.startTask`) and each redirect FoundationNetworking follows (the redirect rules
/// make the next hop from the request as the app gave it, not from what went out). The libcurl
/// transport applies the same rules as it writes its header list (`CurlTransfer.configureHeaders`).
///
/// - A value of only spaces or tabs goes as an empty header (FoundationNetworking would pass it to
///   libcurl as it is, which then leaves the header out).
/// - The transport frames the body (or its absence): a hand-set `Content-Length` or
///   `Transfer-Encoding` would cut it short, or make the server wait for a body that never comes.
/// - The package's `User-Agent` goes on a request that has none.
struct OutgoingFields: Sendable {
    /// The `User-Agent` put on a request that has none (``UserAgent/default``); `nil` when the session's
    /// own settings name one, which FoundationNetworking then adds. On the request rather than in the
    /// session's `httpAdditionalHeaders`: FoundationNetworking merges those into every request's fields
    /// one by one, lowercasing each name (about 3 µs a request, measured in docs/perf-log.md).
    let userAgent: String?

    /// Readies `request`'s fields in one pass over them, and adds `jarCookie` (the jar's `Cookie` for
    /// this hop) unless the request has its own. The request changes only when one of them needs it,
    /// and then once (see ``replacingFields(of:with:)``).
    func prepare(_ request: inout URLRequest, jarCookie: String?) {
        var needsUserAgent = userAgent != nil
        var needsCookie = jarCookie != nil
        var needsRewrite = false
        let fields = request.allHTTPHeaderFields ?? [:]
        for (name, value) in fields {
            if needsUserAgent, TransferRules.isUserAgent(name) { needsUserAgent = false }
            if needsCookie, name.utf8.count == 6, name.caseInsensitiveEquals("Cookie") { needsCookie = false }
            if TransferRules.isRequestFraming(name) || Self.isBlank(value) { needsRewrite = true }
        }
        guard needsUserAgent || needsCookie || needsRewrite else { return }
        var outgoing = fields
        if needsRewrite {
            for (name, value) in fields {
                if TransferRules.isRequestFraming(name) {
                    outgoing[name] = nil
                } else if Self.isBlank(value) {
                    outgoing[name] = ""
                }
            }
        }
        // Neither breaks the line: the `User-Agent` is made of tokens (``UserAgent``), and the jar's
        // field leaves out any cookie with a control character (``TransportCookies/field(from:for:now:)``).
        if needsUserAgent, let userAgent { outgoing["User-Agent"] = userAgent }
        if needsCookie, let jarCookie { outgoing["Cookie"] = jarCookie }
        request = Self.replacingFields(of: request, with: outgoing)
    }

    /// `request` with `fields` as its header fields.
    ///
    /// On Linux a change to a `URLRequest` whose storage is shared (the dispatcher keeps the request
    /// for a retry, the transfer's state keeps it for the next hop) copies it with
    /// FoundationNetworking's `mutableCopy`, which sets every property again, the method through a
    /// case-insensitive comparison with six names: about 4.7 µs a request under perf
    /// (docs/perf-log.md). A new request with the same properties costs a fraction of that. The
    /// properties are those `mutableCopy` copies (`NSURLRequest.setValues(from:)`); a test holds the
    /// list to FoundationNetworking's stored properties, so that one added there fails it.
    static func replacingFields(of request: URLRequest, with fields: [String: String]) -> URLRequest {
        #if canImport(FoundationNetworking)
        // A request without a URL is never sent (`TransferRules.check(url:)` fails it first), and
        // changing it would crash FoundationNetworking's copy, which unwraps the URL: left as it is.
        guard let url = request.url else { return request }
        var fresh = URLRequest(url: url, cachePolicy: request.cachePolicy)
        // Assigned, not passed to the initializer: FoundationNetworking applies a request's
        // `timeoutInterval` only once its setter has run (a flag of `URLRequest` that no API reads).
        // Every request given here has it assigned: `URLSessionTransport.perform` assigns the one the
        // transfer uses, and each redirect hop is made from that request.
        fresh.timeoutInterval = request.timeoutInterval
        // Each only when it differs from a new request's, so that a plain GET sets just its fields.
        if let method = request.httpMethod, method != "GET" { fresh.httpMethod = method }
        fresh.allHTTPHeaderFields = fields
        if let document = request.mainDocumentURL { fresh.mainDocumentURL = document }
        if let body = request.httpBody {
            fresh.httpBody = body
        } else if let stream = request.httpBodyStream {
            fresh.httpBodyStream = stream
        }
        if request.networkServiceType != fresh.networkServiceType { fresh.networkServiceType = request.networkServiceType }
        if request.allowsCellularAccess != fresh.allowsCellularAccess { fresh.allowsCellularAccess = request.allowsCellularAccess }
        if request.httpShouldHandleCookies != fresh.httpShouldHandleCookies { fresh.httpShouldHandleCookies = request.httpShouldHandleCookies }
        if Pipelining.of(request) != Pipelining.of(fresh) { Pipelining.set(Pipelining.of(request), on: &fresh) }
        return fresh
        #else
        var changed = request
        changed.allHTTPHeaderFields = fields
        return changed
        #endif
    }

    /// A value that needs rewriting: not empty, but only spaces and tabs.
    private static func isBlank(_ value: String) -> Bool {
        !value.isEmpty && TransferRules.isBlankValue(value)
    }
}

/// `httpShouldUsePipelining`, which the new request keeps as FoundationNetworking's copy does (and
/// the tests set, to check that). The property is deprecated; read and written through this protocol,
/// it raises no warning where it is used.
protocol PipeliningFlag {
    var pipelining: Bool { get set }
}

extension URLRequest: PipeliningFlag {
    @available(*, deprecated, message: "Only through PipeliningFlag (Pipelining.of, Pipelining.set)")
    var pipelining: Bool {
        get { httpShouldUsePipelining }
        set { httpShouldUsePipelining = newValue }
    }
}

enum Pipelining {
    static func of<R: PipeliningFlag>(_ request: R) -> Bool { request.pipelining }
    static func set<R: PipeliningFlag>(_ value: Bool, on request: inout R) { request.pipelining = value }
}
