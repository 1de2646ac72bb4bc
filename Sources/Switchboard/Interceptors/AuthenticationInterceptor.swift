import Foundation

/// Puts a token on every attempt and refreshes it once when the server answers 401: the
/// refresh-on-401 pattern an app with a login needs.
///
/// ```swift
/// let auth = AuthenticationInterceptor(token: keychain.accessToken) {
///     try await api.refreshAccessToken()          // returns the new token; throw if the login is gone
/// }
/// Dispatcher.shared.updateConfiguration { $0.interceptors = [auth] }
/// ```
/// - The token goes in `Authorization: Bearer <token>` (the header and prefix are configurable).
/// - Without a token yet, the first request fetches one with `refresh`.
/// - On a 401 (``NetworkError/unauthorized(_:)``) for the token in use, the token is refreshed and the
///   request is retried once with the new one. An API that signals an expired token otherwise (a 403
///   with an error code, say) names that failure with `isExpired`; the rules below then apply to it.
///   Concurrent 401s share one refresh. A 401 for a token that was already replaced is retried at once with the current one. A second 401 for the same
///   request, or a refresh that throws or takes longer than `refreshTimeout`, ends the send with the
///   401; other 401s for the token whose refresh failed don't try again.
/// - Requests for which `applies` is false (public endpoints) are left alone.
/// - A send made while this interceptor refreshes, from inside its `refresh` (its task, a child task,
///   or the completion closure of a send made there, however deep), is not adapted by it and doesn't
///   wait for it: the refresh may send through the same dispatcher with the defaults. If such a send
///   gets a 401 (or a failure `isExpired` names), the refresh fails (there is no loop), whatever
///   `refresh` does with the error.
public final class AuthenticationInterceptor: RequestInterceptor {
    private let header: String
    private let prefix: String
    private let applies: @Sendable (any Request) -> Bool
    private let isExpired: @Sendable (NetworkError) -> Bool
    private let store: TokenStore

    /// Creates the interceptor.
    /// - Parameters:
    ///   - token: the token to start with, if the app has one.
    ///   - header: the header the token goes in. Default: `Authorization`.
    ///   - prefix: what precedes the token in it. Default: `Bearer `.
    ///   - applies: which requests get the token. Default: all (but the sends of its own refresh).
    ///   - refreshTimeout: the longest a refresh may take, in seconds; a slower one fails. Default: 30.
    ///   - isExpired: which failures mean the token expired. Default: a 401,
    ///     ``NetworkError/unauthorized(_:)``. It replaces that test: keep `$0.isUnauthorized` in it to
    ///     go on refreshing on a 401. For an API that answers an expired token with a 403 and an error
    ///     code: `{ $0.isUnauthorized || ($0.statusCode == 403 && $0.errorResponse?.json?["error"] == "token_expired") }`.
    ///     Name only failures that mean the token expired: a named failure is retried at once, without
    ///     the ``RetryPolicy``'s backoff or its rule for non-idempotent methods. A download's failure
    ///     carries no body (it was not read into memory): match its status or headers, not its body.
    ///     Called on the interceptors' task, with no lock held; it must not block.
    ///   - refresh: fetches a new token; runs once at a time, however many requests need one. It runs
    ///     in a task of its own; save the new token (to the keychain, say) here, before returning it.
    public init(
        token: String? = nil,
        header: String = "Authorization",
        prefix: String = "Bearer ",
        applies: @escaping @Sendable (any Request) -> Bool = { _ in true },
        refreshTimeout: TimeInterval = 30,
        isExpired: @escaping @Sendable (NetworkError) -> Bool = { $0.isUnauthorized },
        refresh: @escaping @Sendable () async throws -> String
    ) {
        self.header = header
        self.prefix = prefix
        self.applies = applies
        self.isExpired = isExpired
        store = TokenStore(token: token, timeout: refreshTimeout, refresh: refresh)
    }

    private var storeID: ObjectIdentifier { ObjectIdentifier(store) }

    /// The token in use now, if any.
    public var token: String? {
        get async { await store.token }
    }

    /// Sets the header from the current token (fetching one first if there is none).
    public func adapt(_ request: OutgoingRequest, for original: any Request) async throws -> OutgoingRequest {
        guard applies(original) else { return request }
        let scope = RefreshScope.current
        if let mark = scope.runningMark(of: storeID) {
            // A send of this interceptor's running refresh: as it is, at once; after one of them got
            // a 401, the refresh has failed and its further sends fail too.
            if mark.isRefused { throw TokenStore.RefreshRefused() }
            return request
        }
        // Inside another interceptor's running refresh, a refresh of this one isn't waited for: two
        // refreshes whose sends waited for each other would never end. The current token, or none.
        guard let token = try await store.current(waiting: !scope.isInsideARunningRefresh) else { return request }
        var adapted = request
        adapted.headers[header] = prefix + token
        return adapted
    }

    /// Retries a first 401 (or a failure `isExpired` names) with a refreshed (or already replaced) token.
    public func retry(_ context: RetryContext) async -> RetryDecision {
        guard isExpired(context.error), applies(context.original) else { return .doNotRetry }
        // The refresh's own send was refused: the refresh fails (retrying would wait for itself).
        let scope = RefreshScope.current
        if let mark = scope.runningMark(of: storeID) {
            _ = mark.refuse()
            return .doNotRetry
        }
        // A send of another interceptor's running refresh doesn't wait for this one's refresh either
        // (two refreshes could wait for each other): its 401 stands.
        if scope.isInsideARunningRefresh { return .doNotRetry }
        // Once per request: a second 401 means the new token is refused too.
        guard context.errors.filter(isExpired).count == 1 else { return .doNotRetry }
        let sent = context.request.headers[header].map { String($0.dropFirst(prefix.count)) }
        do {
            try await store.replace(sent)
            return .retry
        } catch {
            return .doNotRetry
        }
    }
}

/// The token and the one refresh that may be running.
private actor TokenStore {
    private(set) var token: String?
    private var refreshing: Task<String, any Error>?
    /// The token whose replacement failed: later 401s for it don't refresh again.
    private var failedToReplace: String?
    private let refresh: @Sendable () async throws -> String
    private let timeout: TimeInterval

    init(token: String?, timeout: TimeInterval, refresh: @escaping @Sendable () async throws -> String) {
        self.token = token
        self.timeout = timeout
        self.refresh = refresh
    }

    struct RefreshFailed: Error {}

    /// A send of the refresh got a 401 (the refresh's credentials are refused): the refresh fails.
    struct RefreshRefused: Error, CustomStringConvertible {
        var description: String { "the token refresh's own request was refused (a 401, or a failure isExpired names)" }
    }

    /// The token, fetched first if there is none; while a refresh runs, the token it brings.
    func current() async throws -> String {
        if let refreshing { return try await refreshing.value }
        if let token { return token }
        return try await refreshed()
    }

    /// The token; while a refresh runs, the token it brings, or (`waiting` false) the token now, if any.
    func current(waiting: Bool) async throws -> String? {
        if refreshing != nil, !waiting { return token }
        return try await current()
    }

    /// Replaces `rejected` with a new token, unless it was replaced already (or its replacement failed).
    func replace(_ rejected: String?) async throws {
        if let token, token != rejected { return }
        if token == nil, let rejected, rejected == failedToReplace { throw RefreshFailed() }
        do {
            _ = try await refreshed()
        } catch {
            failedToReplace = rejected
            throw error
        }
    }

    /// Joins the running refresh, or starts one. The refresh publishes its token (or clears it) on
    /// this actor before it completes, so whoever resumes first, a joiner or the starter, and whoever
    /// asks next, sees the new token: a retry never goes out with the token just replaced.
    private func refreshed() async throws -> String {
        if let refreshing { return try await refreshing.value }
        // The refresh and what it sends run inside this run's scope: their sends are not adapted by
        // this store's interceptor and don't wait for this refresh.
        let mark = RefreshMark(owner: ObjectIdentifier(self))
        let scope = RefreshScope.current.adding(mark)
        // Isolated to this actor (it uses `self`): the token is set here, before the task completes.
        let task = Task { [refresh, timeout] () async throws -> String in
            defer {
                self.refreshing = nil
                mark.end()
            }
            do {
                // The refresh races a timer; the loser is cancelled.
                let fresh = try await withThrowingTaskGroup(of: String.self) { group in
                    group.addTask { try await scope.running { try await refresh() } }
                    group.addTask {
                        try await Task.sleep(nanoseconds: UInt64(max(0, timeout) * 1e9))
                        throw RefreshFailed()
                    }
                    defer { group.cancelAll() }
                    guard let first = try await group.next() else { throw RefreshFailed() }
                    return first
                }
                if mark.isRefused { throw RefreshRefused() }
                self.token = fresh
                return fresh
            } catch {
                self.token = nil
                throw error
            }
        }
        refreshing = task
        return try await task.value
    }
}
