import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The least a delegate-based URLSession client can do: collect each task's body in the delegate and
/// resume a continuation on completion, then JSONSerialization. Every Linux trap Switchboard handles
/// (401 challenges, deadlines, redirects) needs the session delegate, so this is the floor for any
/// client that handles them; it shows how much of Switchboard's cost is the delegate session's own.
final class BareDelegateClient: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // `@unchecked Sendable`: `pending` is only touched inside `lock`.
    private let lock = NSLock()
    private var pending: [Int: (data: Data, continuation: CheckedContinuation<Data?, Never>)] = [:]
    private(set) var session: URLSession!

    init(configuration: URLSessionConfiguration) {
        super.init()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    /// The body of `request`, or `nil` on failure.
    func data(for request: URLRequest) async -> Data? {
        await withCheckedContinuation { continuation in
            let task = session.dataTask(with: request)
            lock.lock()
            pending[task.taskIdentifier] = (Data(), continuation)
            lock.unlock()
            task.resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        pending[dataTask.taskIdentifier]?.data.append(data)
        lock.unlock()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let entry = pending.removeValue(forKey: task.taskIdentifier)
        lock.unlock()
        entry?.continuation.resume(returning: error == nil ? entry?.data : nil)
    }
}
