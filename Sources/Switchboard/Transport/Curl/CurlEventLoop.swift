#if canImport(Glibc)
import Dispatch
import Foundation

/// One libcurl multi handle driven by one thread of its own: every transfer of a ``CurlTransport``
/// runs here, and every callback of those transfers is called from this thread, one at a time.
///
/// Other threads never touch the multi handle or an easy handle: they leave starts and cancels in the
/// inbox (a lock) and wake the thread with `curl_multi_wakeup`, the one libcurl call that is safe from
/// any thread.
///
/// `@unchecked Sendable`: `inbox` is behind its lock; `running` and the handles are touched only by the
/// loop thread (after `init`, which finishes before the thread starts).
final class CurlEventLoop: @unchecked Sendable {
    private struct Inbox {
        var starts: [CurlTransfer] = []
        var cancels: [CurlTransfer] = []
        var stopping = false
        /// The loop is (about to be) asleep in `curl_multi_poll`: new work must wake it. While it runs,
        /// it finds new work on its own, and a wake-up (a syscall) would be wasted.
        var sleeping = false
    }

    let curl: CurlLibrary
    private let multi: CurlLibrary.Handle
    /// Locked: any thread leaves starts, cancels and the stop here; the loop thread takes them.
    private let inbox = Locked(Inbox())
    /// The transfers whose current hop is in the multi handle, by easy handle. Loop thread only.
    private var running: [CurlLibrary.Handle: CurlTransfer] = [:]
    /// Easy handles of ended hops, for the next (libcurl's advice: reuse them). Loop thread only.
    private var spare: [CurlEasy] = []
    private static let spareLimit = 64
    /// When the earliest idle deadline of `running` may fall (`DispatchTime` nanoseconds); the loop
    /// looks at the transfers' idle time only from then on. Loop thread only.
    private var nextIdleCheck: UInt64 = .max
    /// The trust settings whose memory the loop's easy handles may point into (`CURLOPT_*_BLOB` without
    /// a copy): kept as long as the loop, so no handle outlives what it points to.
    private let trust: CurlTrust

    init(curl: CurlLibrary, maximumConnectionsPerHost: Int, trust: CurlTrust) throws(CurlLoadError) {
        guard let multi = curl.multiInit() else { throw CurlLoadError(reason: "curl_multi_init failed") }
        self.curl = curl
        self.multi = multi
        self.trust = trust
        _ = curl.multiSetLong(multi, CurlConstant.multiOptPipelining, CurlConstant.pipeMultiplex)
        _ = curl.multiSetLong(multi, CurlConstant.multiOptMaxHostConnections, max(1, maximumConnectionsPerHost))
        // The thread holds the loop until `stop()` ends it.
        let thread = Thread { [self] in run() }
        thread.name = "switchboard.curl"
        thread.start()
    }

    /// Hands a transfer to the loop (from any thread).
    func start(_ transfer: CurlTransfer) {
        post { $0.starts.append(transfer) }
    }

    /// Asks the loop to cancel a transfer (from any thread); its completion reports `cancelled`.
    func cancel(_ transfer: CurlTransfer) {
        post { $0.cancels.append(transfer) }
    }

    /// Ends the loop: running transfers end `cancelled`, the multi handle is cleaned up, the thread exits.
    func stop() {
        post { $0.stopping = true }
    }

    /// Leaves work in the inbox and wakes the loop if it sleeps (or is about to).
    private func post(_ change: (inout Inbox) -> Void) {
        let wake = inbox.withLock { inbox -> Bool in
            change(&inbox)
            defer { inbox.sleeping = false }
            return inbox.sleeping
        }
        if wake { _ = curl.multiWakeup(multi) }
    }

    private func run() {
        var starts: [CurlTransfer] = []
        var cancels: [CurlTransfer] = []
        var active: Int32 = 0
        var ready: Int32 = 0
        while true {
            // The inbox's arrays and these two trade places, so neither allocates once it has grown.
            let stopping = inbox.withLock { inbox -> Bool in
                swap(&inbox.starts, &starts)
                swap(&inbox.cancels, &cancels)
                return inbox.stopping
            }
            for transfer in starts { begin(transfer) }
            for transfer in cancels { end(transfer, .failure(.cancelled)) }
            starts.removeAll(keepingCapacity: true)
            cancels.removeAll(keepingCapacity: true)
            if stopping {
                for transfer in Array(running.values) { end(transfer, .failure(.cancelled)) }
                // Transfers started after the stop have no hop in the multi handle: they end here too.
                for transfer in inbox.withLock({ $0.starts }) { transfer.finish(.failure(.cancelled)) }
                for easy in spare { curl.easyCleanup(easy.handle) }
                spare = []
                _ = curl.multiCleanup(multi)
                return
            }
            _ = curl.multiPerform(multi, &active)
            collectFinished()
            endIdleTransfers()
            // Work that came meanwhile is taken at once; otherwise the loop says it sleeps (under the
            // inbox's lock, so new work from then on wakes it) and sleeps until a socket is ready,
            // libcurl's next timeout, a wake-up, or a second.
            let idle = inbox.withLock { inbox -> Bool in
                guard inbox.starts.isEmpty, inbox.cancels.isEmpty, !inbox.stopping else { return false }
                inbox.sleeping = true
                return true
            }
            guard idle else { continue }
            _ = curl.multiPoll(multi, nil, 0, pollTimeout(), &ready)
            inbox.withLock { $0.sleeping = false }
        }
    }

    /// Ends every hop that neither sent nor received a byte for its idle timeout, with
    /// ``NetworkError/idleTimeout(after:)``; sets when to look next (the earliest deadline left).
    private func endIdleTransfers() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now >= nextIdleCheck else { return }
        var expired: [CurlTransfer] = []
        var earliest = UInt64.max
        for transfer in running.values where transfer.idleNanoseconds != .max {
            let (deadline, overflow) = transfer.lastActivity.addingReportingOverflow(transfer.idleNanoseconds)
            if overflow { continue }
            if deadline <= now { expired.append(transfer) } else { earliest = min(earliest, deadline) }
        }
        // At most every 5 ms: deadlines close together are looked at in one pass.
        nextIdleCheck = earliest == .max ? .max : earliest &+ 5_000_000
        for transfer in expired { end(transfer, .failure(.idleTimeout(after: transfer.idleTimeout ?? 0))) }
    }

    /// How long the loop may sleep in `curl_multi_poll`: a second at most, and no later than the next
    /// idle deadline.
    private func pollTimeout() -> Int32 {
        guard nextIdleCheck != .max else { return 1000 }
        let now = DispatchTime.now().uptimeNanoseconds
        guard nextIdleCheck > now else { return 0 }
        return Int32(min(1000, (nextIdleCheck - now + 999_999) / 1_000_000))
    }

    /// Starts a transfer's first hop.
    private func begin(_ transfer: CurlTransfer) {
        guard !transfer.isFinished else { return }  // cancelled before it started
        guard let easy = spare.popLast() ?? curl.easyInit().map(CurlEasy.init) else {
            transfer.finish(.failure(.transport(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_easy_init failed"]))))
            return
        }
        if let error = transfer.makeHop(on: easy) {
            recycle(easy)
            transfer.finish(.failure(error))
            return
        }
        running[easy.handle] = transfer
        if transfer.idleNanoseconds != .max {
            let (deadline, overflow) = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(transfer.idleNanoseconds)
            if !overflow { nextIdleCheck = min(nextIdleCheck, deadline) }
        }
        if curl.multiAdd(multi, easy.handle) != 0 {
            running[easy.handle] = nil
            recycle(transfer.releaseHop())
            transfer.finish(.failure(.transport(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_multi_add_handle failed"]))))
        }
    }

    /// Keeps an ended hop's easy handle for the next hop, or frees it when enough are kept. (The next
    /// hop resets it unless both are plain GETs: see ``CurlEasy/Options``.)
    private func recycle(_ easy: CurlEasy?) {
        guard let easy else { return }
        if spare.count < Self.spareLimit {
            spare.append(easy)
        } else {
            curl.easyCleanup(easy.handle)
        }
    }

    /// Removes a transfer's hop (if it has one in the multi handle) and ends it with `result`.
    private func end(_ transfer: CurlTransfer, _ result: Result<TransportResponse, NetworkError>) {
        if let easy = transfer.easy, running.removeValue(forKey: easy.handle) != nil {
            _ = curl.multiRemove(multi, easy.handle)
        }
        recycle(transfer.releaseHop())
        transfer.finish(result)
    }

    /// Reads libcurl's "done" messages: each hop that ended goes on to its next hop or ends its transfer.
    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl.multiInfoRead(multi, &left) {
            // struct CURLMsg { CURLMSG msg; CURL *easy_handle; union { void *whatever; CURLcode result; } data; }
            let kind = message.load(as: Int32.self)
            let pointerSize = MemoryLayout<UnsafeRawPointer>.size
            guard kind == CurlConstant.messageDone,
                let easy = message.load(fromByteOffset: pointerSize, as: CurlLibrary.Handle?.self)
            else { continue }
            let code = message.load(fromByteOffset: 2 * pointerSize, as: Int32.self)
            guard let transfer = running.removeValue(forKey: easy) else { continue }
            _ = curl.multiRemove(multi, easy)
            switch transfer.hopEnded(code) {
            case .next:
                recycle(transfer.releaseHop())
                begin(transfer)
            case .finished(let result):
                recycle(transfer.releaseHop())
                transfer.finish(result)
            }
        }
    }
}
#endif
