import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Follows every send through its life: the one protocol behind logging, accessories (a loading
/// indicator) and metrics of your own. Every method has an empty default; implement the ones you need.
///
/// For one send, in order:
///
/// | Event | Called | Thread |
/// |---|---|---|
/// | ``requestDidStart(_:)`` | once, before observers hear `started` | the thread that calls `send` |
/// | ``request(_:didAdapt:attempt:)`` | per attempt, as the request leaves for the transport | `send`'s thread, a global queue (retries), the interceptors' task or the cache's disk-read task |
/// | ``request(_:didReceive:attempt:)`` | per attempt, as the transport reports | a global queue |
/// | ``request(_:didDecode:attempt:)`` | per attempt that got a response, after validation, decoding and the response hooks | a global queue |
/// | ``request(_:willRetry:after:because:)`` | before each retry's wait | the thread that decided |
/// | ``request(_:didFinish:)`` | once, with the final result (after response hooks) | the thread that finished the send |
/// | ``requestWillDeliver(_:error:)`` | once, before observers and the closure hear the result | ``Configuration/callbackQueue`` |
/// | ``requestDidDeliver(_:error:)`` | once, after observers and the closure on that queue | ``Configuration/callbackQueue`` |
///
/// A cancelled send gets `didFinish` with ``NetworkError/cancelled`` and the two delivery calls; a send
/// whose request could not be built gets `didStart`, `didFinish` and the delivery calls. Monitors come
/// from ``Configuration/monitors`` (every send; logging first when ``Configuration/logMode`` is on) and
/// the request's ``RequestPipeline/monitors``, in that order. Keep them quick: they run inside the send.
public protocol EventMonitor: Sendable {
    /// The send started; observers haven't heard `started` yet.
    func requestDidStart(_ send: SendContext)
    /// An attempt's request is built and adapted (adapters, interceptors) and goes to the transport.
    func request(_ send: SendContext, didAdapt urlRequest: URLRequest, attempt: Int)
    /// The transport reported an attempt: the response head and body, or the error (before validation).
    func request(_ send: SendContext, didReceive result: Result<TransportResponse, NetworkError>, attempt: Int)
    /// An attempt's response was validated, decoded and accepted by the response hooks, or the first of
    /// them that failed it: the attempt's outcome as the retry decision sees it.
    func request(_ send: SendContext, didDecode result: Result<ResponseContext, NetworkError>, attempt: Int)
    /// Attempt `attempt` will start after `delay` seconds, because the previous one failed with `error`.
    func request(_ send: SendContext, willRetry attempt: Int, after delay: TimeInterval, because error: NetworkError)
    /// The send's final result, as observers will get it.
    func request(_ send: SendContext, didFinish result: Result<ResponseContext, NetworkError>)
    /// Observers and the closure are about to hear the result (`error` is `nil` on success).
    func requestWillDeliver(_ send: SendContext, error: NetworkError?)
    /// Observers and the closure on the callback queue have heard the result.
    func requestDidDeliver(_ send: SendContext, error: NetworkError?)
}

extension EventMonitor {
    public func requestDidStart(_ send: SendContext) {}
    public func request(_ send: SendContext, didAdapt urlRequest: URLRequest, attempt: Int) {}
    public func request(_ send: SendContext, didReceive result: Result<TransportResponse, NetworkError>, attempt: Int) {}
    public func request(_ send: SendContext, didDecode result: Result<ResponseContext, NetworkError>, attempt: Int) {}
    public func request(_ send: SendContext, willRetry attempt: Int, after delay: TimeInterval, because error: NetworkError) {}
    public func request(_ send: SendContext, didFinish result: Result<ResponseContext, NetworkError>) {}
    public func requestWillDeliver(_ send: SendContext, error: NetworkError?) {}
    public func requestDidDeliver(_ send: SendContext, error: NetworkError?) {}
}

/// One send, as monitors see it: the same object for every call about that send.
public final class SendContext: Sendable {
    /// The send's id: its events' ``RequestEvent/sendID``.
    public let id: UInt64
    /// The request.
    public let request: any Request
    /// When the send started.
    public let startDate: Date
    /// When the send started, in uptime nanoseconds (`DispatchTime`), for durations.
    public let startTime: UInt64
    /// Locked: recorded by the send at each attempt, read by monitors from any thread.
    private let sent = Locked<URLRequest?>(nil)

    init(id: UInt64, request: any Request) {
        self.id = id
        self.request = request
        startDate = Date()
        startTime = DispatchTime.now().uptimeNanoseconds
    }

    /// The latest attempt's request as it went to the transport; `nil` before the first.
    public var urlRequest: URLRequest? { sent.withLock { $0 } }

    func record(_ urlRequest: URLRequest) { sent.withLock { $0 = urlRequest } }

    /// Seconds since the send started.
    public var elapsed: TimeInterval { Double(DispatchTime.now().uptimeNanoseconds &- startTime) / 1e9 }
}

/// The monitors of one send, called in order.
struct Monitors: Sendable {
    let all: [any EventMonitor]
    let context: SendContext?

    init(_ monitors: [any EventMonitor], id: UInt64, request: any Request) {
        all = monitors
        context = monitors.isEmpty ? nil : SendContext(id: id, request: request)
    }

    var isEmpty: Bool { all.isEmpty }

    /// Calls `body` for each monitor with the send's context.
    @inline(__always)
    func each(_ body: (any EventMonitor, SendContext) -> Void) {
        guard let context else { return }
        for monitor in all { body(monitor, context) }
    }

    /// Tells each monitor what attempt `number` sends (and records it for the send's context).
    func didAdapt(_ urlRequest: URLRequest, attempt number: Int) {
        guard let context else { return }
        context.record(urlRequest)
        for monitor in all { monitor.request(context, didAdapt: urlRequest, attempt: number) }
    }

    /// Tells each monitor how attempt `number`'s response was checked (stages 6 to 8, the hooks included).
    func didDecode(_ outcome: Outcome, of request: any Request, attempt number: Int) {
        guard let context else { return }
        let decoded = outcome.map { ResponseContext(request: request, parts: $0) }
        for monitor in all { monitor.request(context, didDecode: decoded, attempt: number) }
    }
}
