import Foundation

/// Rewrites the URL of a request before it is sent: the Swift form of YTKNetwork's `YTKUrlFilterProtocol`.
///
/// Filters run in order (the configuration's, then the request's), each seeing the previous one's
/// output, after the base URL, path and query parameters are joined. They are skipped for requests whose
/// ``Request/path`` is an absolute URL and for ``Request/makeURLRequest(baseURL:)``.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.urlFilters.append(URLArgumentsFilter(["version": appVersion])) }
/// ```
/// Filters run on the thread that calls `send`.
public protocol URLFilter: Sendable {
    /// The URL to use instead of `url` for `request`.
    /// - Throws: any error; the send fails with ``NetworkError/invalidRequest(reason:)``.
    func filter(_ url: URL, for request: any Request) throws -> URL
}

/// Appends fixed query arguments to every URL, e.g. the app's version (YTKNetwork's advanced usage,
/// `YTKUrlArgumentsFilter`). An argument whose name the URL's query already has is not added again.
public struct URLArgumentsFilter: URLFilter {
    /// The arguments to append.
    public let arguments: [String: String]

    /// Creates a filter that appends `arguments` (in name order).
    public init(_ arguments: [String: String]) {
        self.arguments = arguments
    }

    /// `url` with the arguments it lacks appended.
    public func filter(_ url: URL, for request: any Request) throws -> URL {
        let existing = Set(URLComponents(url: url, resolvingAgainstBaseURL: true)?.queryItems?.map(\.name) ?? [])
        let missing = arguments.filter { !existing.contains($0.key) }
        guard !missing.isEmpty else { return url }
        let query = try URLEncodedForm.encode(.object(missing.mapValues(JSON.string)))
        return URLEncodedForm.appendingQuery(query, to: url)
    }
}

/// A filter from a closure.
///
/// ```swift
/// ClosureURLFilter { url, request in url.appendingPathExtension("json") }
/// ```
public struct ClosureURLFilter: URLFilter {
    private let body: @Sendable (URL, any Request) throws -> URL

    /// Creates a filter that calls `body`.
    public init(_ body: @escaping @Sendable (URL, any Request) throws -> URL) {
        self.body = body
    }

    /// What the closure returns.
    public func filter(_ url: URL, for request: any Request) throws -> URL {
        try body(url, request)
    }
}
