import Dispatch
import Foundation
import Switchboard

/// `switchboard-probe starved <deadline|cancel>`: one send that ends while every worker of
/// `DispatchQueue.global()` is blocked; prints `ended <outcome> sentinel=<ran> after=<seconds>`.
///
/// A process of its own, because blocking every global worker stalls whatever else the process does
/// (FoundationNetworking's file reads among it, which then crash a cancelled upload beside it).
/// `sentinel` says whether a block queued on the global queue after the blocked ones ran before the
/// send ended (it must not: the end never waits for a global worker); `after` is the time from the
/// deadline's start or the cancel to the end.
/// - `deadline`: a 0.3 s deadline on a transport that never reports; the sweeper ends the send after
///   its grace second.
/// - `cancel`: a cancel of a typed request (checked off the transport's queue) on a transport that
///   reports it at once; `after` must stay under the sweeper's grace second, which would otherwise end it.
func starved(_ mode: String) -> Never {
    let client = Dispatcher(
        configuration: Configuration {
            $0.baseURL = URL(string: "http://127.0.0.1:9")
            $0.callbackQueue = .immediate
            $0.coalescesDuplicates = false
            $0.cache = nil
        }, transport: HeldTransport(reportsCancel: mode == "cancel"))
    let blocked = ProcessInfo.processInfo.activeProcessorCount + 64
    let release = DispatchSemaphore(value: 0), ended = DispatchSemaphore(value: 0)
    let sentinel = Locked(false)
    for _ in 0..<blocked { DispatchQueue.global().async { release.wait() } }
    DispatchQueue.global().async { sentinel.withLock { $0 = true } }
    var start = Date()
    let line = Locked("")
    let complete: @Sendable (NetworkError?) -> Void = { error in
        let ran = sentinel.withLock { $0 }
        line.withLock { $0 = "ended \(error.map { "\($0)" } ?? "succeeded") sentinel=\(ran)" }
        ended.signal()
    }
    if mode == "cancel" {
        let handle = client.send(TypedHeld()) { complete($0.failure) }
        start = Date()
        handle.cancel()
    } else {
        client.send(Held(deadline: 0.3)) { complete($0.failure) }
    }
    let finished = ended.wait(timeout: .now() + 60) == .success
    let after = Date().timeIntervalSince(start)
    for _ in 0..<blocked { release.signal() }
    print(finished ? "\(line.withLock { $0 }) after=\(after)" : "hung")
    exit(0)
}

/// A send held by its transport.
struct Held: Request {
    var deadline: TimeInterval = 60
    var path: String { "/held" }
    var timeout: TimeInterval? { deadline }
}

/// The same, decoded into a model.
struct TypedHeld: Request {
    struct Model: Decodable, Sendable { let id: Int }
    typealias Value = Model
    var path: String { "/held" }
}

/// Accepts every transfer and never answers; a cancel is reported at once, on its queue, when
/// `reportsCancel`, else never.
final class HeldTransport: Transport {
    let reportsCancel: Bool
    private let queue = DispatchQueue(label: "probe.held")
    init(reportsCancel: Bool) { self.reportsCancel = reportsCancel }

    func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        HeldTask(reportsCancel: reportsCancel, queue: queue, callbacks: callbacks)
    }

    struct HeldTask: TransportTask {
        let reportsCancel: Bool
        let queue: DispatchQueue
        let callbacks: TransferCallbacks
        func cancel() {
            guard reportsCancel else { return }
            queue.async { callbacks.completion(.failure(.cancelled)) }
        }
    }
}
