import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default transport: one `URLSession` with a serial delegate queue, whose delegate collects each
/// body, counts bytes, follows redirects safely and answers auth challenges. (The deadline is kept by
/// the dispatcher, above the transport.)
///
/// It handles the traps of URLSession on Linux: a concurrent delegate queue garbles bodies (the queue is
/// serial); an unanswered 401 Basic challenge hangs forever (every challenge is answered, never with a
/// nil credential); a 307/308 drops the POST body (Switchboard follows those itself, body and all);
/// credentials leak on a cross-origin redirect (they are stripped); cookies set by a redirect are not
/// sent on the next hop (they are).
///
/// Cookies follow ``Configuration/cookies``: none, an in-memory jar (the default), or the shared
/// `HTTPCookieStorage`. Nothing else is persisted: no URL cache, no credential storage.
public final class URLSessionTransport: Transport {
    private let session: URLSession
    private let delegate: SessionDelegate
    /// The serial queue delegate callbacks, cancels and completions run on.
    let queue: DispatchQueue

    /// Creates a transport from a configuration's transport settings.
    /// - Parameters:
    ///   - configuration: supplies ``Configuration/maximumConnectionsPerHost``,
    ///     ``Configuration/idleTimeout`` and ``Configuration/cookies``.
    ///   - sessionConfiguration: the base session settings; `.ephemeral` by default.
    public convenience init(configuration: Configuration = Configuration(), sessionConfiguration: URLSessionConfiguration = .ephemeral) {
        self.init(configuration: configuration, sessionConfiguration: sessionConfiguration, cookieJar: nil)
    }

    /// Creates a transport; `cookieJar` is the in-memory jar for ``CookiePolicy/inMemory`` (`nil`: a new one).
    init(configuration: Configuration, sessionConfiguration: URLSessionConfiguration = .ephemeral, cookieJar: HTTPCookieStorage?) {
        // A copy: URLSessionConfiguration is a class, and the caller's must not change.
        let settings = (sessionConfiguration.copy() as? URLSessionConfiguration) ?? sessionConfiguration
        settings.httpMaximumConnectionsPerHost = configuration.maximumConnectionsPerHost
        settings.timeoutIntervalForRequest = configuration.idleTimeout
        settings.urlCache = nil
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        settings.urlCredentialStorage = nil
        switch configuration.cookies {
        case .none:
            settings.httpCookieStorage = nil
            settings.httpShouldSetCookies = false
            settings.httpCookieAcceptPolicy = .never
        case .inMemory:
            settings.httpCookieStorage = cookieJar ?? URLSessionConfiguration.ephemeral.httpCookieStorage
            settings.httpShouldSetCookies = true
            settings.httpCookieAcceptPolicy = .always
        case .shared:
            settings.httpCookieStorage = HTTPCookieStorage.shared
            settings.httpShouldSetCookies = true
            settings.httpCookieAcceptPolicy = .always
        }
        queue = DispatchQueue(label: "switchboard.transport")
        let operationQueue = DelegateQueue(queue)
        delegate = SessionDelegate()
        session = URLSession(configuration: settings, delegate: delegate, delegateQueue: operationQueue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Starts a transfer; see ``Transport/perform(_:options:callbacks:)``. A body from memory or a stream
    /// goes with a data task, a file with an upload task (read as it is sent); a file destination is
    /// written as the body arrives. Callbacks run on the transport's serial queue.
    public func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let state = TransferState(request: request, options: options, callbacks: callbacks)
        delegate.start(state, in: session, queue: queue)
        return URLSessionTransportTask(state: state, queue: queue)
    }
}

/// Cancels one transfer.
struct URLSessionTransportTask: TransportTask {
    let state: TransferState
    let queue: DispatchQueue

    /// Ends the transfer with `cancelled` on the transport's queue, after any progress callback already
    /// running there, so the completion is always the transfer's last callback.
    func cancel() {
        queue.async { [state] in
            if state.finish(.failure(.cancelled)) { state.cancelTask() }
        }
    }
}

/// The session's delegate queue: a serial OperationQueue whose block operations (every delegate
/// callback FoundationNetworking makes) go straight to the transport's serial dispatch queue.
///
/// FoundationNetworking wraps each callback in `delegateQueue.addOperation { … }`; through a plain
/// OperationQueue that is a BlockOperation allocation and the queue's bookkeeping per callback, three
/// callbacks per request. Going straight to the dispatch queue keeps them serial and in order, for less.
///
/// Not inline on the calling thread (FoundationNetworking's work queue), though that would save a hop:
/// a completion run there schedules the task's removal from the session at once, and a `cancel()` that
/// raced it then reports on a task the session no longer knows, a `fatalError` in FoundationNetworking
/// (`ReentrancyTests` crashed in 6 of 12 runs that way).
///
/// `@unchecked Sendable`: OperationQueue is thread-safe; the subclass adds only an immutable queue.
final class DelegateQueue: OperationQueue, @unchecked Sendable {
    private let target: DispatchQueue

    init(_ target: DispatchQueue) {
        self.target = target
        super.init()
        name = "switchboard.transport"
        maxConcurrentOperationCount = 1
        underlyingQueue = target  // for operations added as Operation objects, if any
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        target.async(execute: block)
    }
}
