import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
/// A transport on libcurl's multi interface, for Linux: every transfer on one thread of its own,
/// without FoundationNetworking's per-chunk operations, so each request costs a fraction of the CPU
/// and context switches URLSession's do. Opt in with ``TransportFactory/curl``; URLSession stays the
/// default.
///
/// ```swift
/// Dispatcher.shared.updateConfiguration { $0.transport = (try? .curlIfAvailable()) ?? .urlSession }
/// ```
///
/// It needs `libcurl.so.4` 7.68 or newer at run time (Debian and Ubuntu: the `libcurl4` package, which
/// FoundationNetworking already needs) and nothing at build time: the library is loaded with `dlopen`.
/// It behaves as ``URLSessionTransport`` does, rule for rule (the package's conformance suite runs on
/// both): redirects and Basic challenges decided by ``TransferRules`` (libcurl's own redirect
/// following is off), size limits, file and stream bodies, file destinations from an offset, gzip,
/// deflate and brotli decoding, the configuration's idle timeout, connections per host and cookies,
/// TLS with the system's CA store or the trust policy of ``Configuration/serverTrust`` (CAs, pins, a
/// client certificate: see ``TrustPolicy``), HTTP/2 when an https server offers it.
///
/// Callbacks run on the transport's loop thread, one at a time.
public final class CurlTransport: Transport {
    private let loop: CurlEventLoop
    /// The jar whose cookies go on requests, `nil` with ``CookiePolicy/none``.
    private let cookieJar: HTTPCookieStorage?

    /// The transport's cookie jar (``Configuration/cookies``), or none.
    public var addedCookies: TransportCookies { cookieJar.map { .jar($0) } ?? .none }
    private let idleTimeout: TimeInterval
    /// ``Configuration/serverTrust``, prepared once for libcurl.
    private let trust: CurlTrust
    /// ``Configuration/proxy``, with the environment read when the transport was made.
    private let proxies: ProxyRoutes
    /// The settings it was made with (``Transport/applies(serverTrust:proxy:)``).
    private let madeWith: (trust: ServerTrust, proxy: ProxySetting)

    /// Whether it was made with these settings.
    public func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool {
        madeWith.trust == serverTrust && madeWith.proxy == proxy
    }
    /// How many transfers have not yet called their completion (a cancelled one counts until the loop
    /// has ended it).
    /// Locked: senders add in `perform`, the loop thread takes away at each completion, tests read.
    private let unreported = Locked(0)

    /// How many transfers have not yet reported their end: for the package's tests, which wait for
    /// none before they look for a late callback.
    var unreportedTransfers: Int { unreported.withLock { $0 } }

    /// Creates a transport with a configuration's transport settings (connections per host, cookies,
    /// and the idle timeout of a transfer whose ``TransferOptions/idleTimeout`` is `nil`; a dispatcher
    /// sets that for every send, from ``Request/idleTimeout`` or ``Configuration/idleTimeout``, so a
    /// change applies to the next send).
    /// - Throws: ``CurlLoadError`` when libcurl can't be used here.
    public convenience init(configuration: Configuration = Configuration()) throws(CurlLoadError) {
        try self.init(configuration: configuration, cookieJar: nil)
    }

    init(configuration: Configuration, cookieJar: HTTPCookieStorage?) throws(CurlLoadError) {
        let curl = try CurlLibrary.shared.get()
        trust = CurlTrust(configuration.serverTrust, curl: curl)
        loop = try CurlEventLoop(curl: curl, maximumConnectionsPerHost: configuration.maximumConnectionsPerHost, trust: trust)
        switch configuration.cookies {
        case .none: self.cookieJar = nil
        case .inMemory: self.cookieJar = cookieJar ?? URLSessionConfiguration.ephemeral.httpCookieStorage
        case .shared: self.cookieJar = HTTPCookieStorage.shared
        }
        idleTimeout = configuration.idleTimeout
        proxies = ProxyRoutes(configuration.proxy)
        madeWith = (configuration.serverTrust, configuration.proxy)
    }

    /// Ends the loop thread; transfers still running end `cancelled`.
    deinit {
        loop.stop()
    }

    /// The version of the libcurl loaded (`7.88.1`), or `nil` when it can't be loaded.
    public static var libraryVersion: String? { try? CurlLibrary.shared.get().version }

    /// Starts a transfer on the loop thread.
    public func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let idle = IdleTimeouts.chosen(options: options, request: request.urlRequest, configured: idleTimeout)
        unreported.withLock { $0 += 1 }
        let transfer = CurlTransfer(
            curl: loop.curl, request: request, options: options, callbacks: callbacks, cookieJar: cookieJar, trust: trust, proxies: proxies, idleTimeout: idle,
            unreported: unreported)
        loop.start(transfer)
        return CurlTask(transfer: transfer, loop: loop)
    }
}

/// A transfer on the libcurl transport: cancelling it asks the loop thread, which ends it there.
private struct CurlTask: TransportTask {
    let transfer: CurlTransfer
    let loop: CurlEventLoop

    func cancel() {
        guard !transfer.isFinished else { return }
        loop.cancel(transfer)
    }
}
#endif

extension TransportFactory {
    /// The libcurl transport (``CurlTransport``, Linux only). Where it can't be used (no libcurl, one
    /// older than 7.68, another platform), every send fails with a ``NetworkError/transport(_:)`` error
    /// that says why; use ``curlIfAvailable()`` to fall back instead. On Apple platforms (written for,
    /// not built or tested in this project's CI) it is always that failing transport.
    ///
    /// ```swift
    /// Dispatcher.shared.updateConfiguration { $0.transport = .curl }
    /// ```
    public static let curl = TransportFactory(name: "libcurl") { context in
        #if canImport(Glibc)
        do throws(CurlLoadError) {
            return try CurlTransport(configuration: context.configuration, cookieJar: context.cookieJar)
        } catch {
            return UnavailableTransport(reason: error.description)
        }
        #else
        return UnavailableTransport(reason: CurlLoadError.notLinux.description)
        #endif
    }

    /// ``curl``, when libcurl can be used here.
    ///
    /// ```swift
    /// Dispatcher.shared.updateConfiguration { $0.transport = (try? .curlIfAvailable()) ?? .urlSession }
    /// ```
    /// - Throws: ``CurlLoadError`` saying why not: no `libcurl.so.4`, one older than 7.68, a processor
    ///   other than x86_64 or AArch64, a platform other than Linux (on Apple platforms, written for,
    ///   not built or tested in this project's CI: always).
    public static func curlIfAvailable() throws(CurlLoadError) -> TransportFactory {
        #if canImport(Glibc)
        _ = try CurlLibrary.shared.get()
        return curl
        #else
        throw CurlLoadError.notLinux
        #endif
    }
}

extension CurlLoadError {
    static var notLinux: CurlLoadError {
        CurlLoadError(reason: "it is for Linux; on Apple platforms URLSession is the transport")
    }
}

/// A transport that sends nothing: every transfer fails with `error`, from a global queue (a setting
/// the dispatcher's transport can't apply).
struct RefusingTransport: Transport {
    let error: NetworkError

    func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let completion = callbacks.completion
        let error = error
        WorkerQueue.async { completion(.failure(error)) }
        return RefusedTransfer()
    }

    private struct RefusedTransfer: TransportTask {
        func cancel() {}
    }

    var addedCookies: TransportCookies { .none }
    func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool { true }
}

/// A transport that can't send: every transfer fails, from a global queue, with the reason.
struct UnavailableTransport: Transport {
    let reason: String

    /// Any: it sends nothing, and its own reason (libcurl can't be used) is the one to report.
    func applies(serverTrust: ServerTrust, proxy: ProxySetting) -> Bool { true }

    func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        let completion = callbacks.completion
        let error = NetworkError.transport(URLError(.cannotLoadFromNetwork, userInfo: [NSLocalizedDescriptionKey: reason]))
        WorkerQueue.async { completion(.failure(error)) }
        return NothingToCancel()
    }

    private struct NothingToCancel: TransportTask {
        func cancel() {}
    }
}
