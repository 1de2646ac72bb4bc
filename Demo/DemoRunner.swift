import Foundation
import Switchboard

/// Runs the demo's scenarios against a server at `baseURL`, using `Dispatcher.shared`.
enum DemoRunner {
    /// One scenario: a title and what it does.
    struct Scenario: Sendable {
        let title: String
        let run: @Sendable (Transcript) async -> Void
    }

    /// Every scenario, in order.
    static let scenarios: [Scenario] =
        ObserverScenarios.all + TypedScenarios.all + ErrorScenarios.all + CustomisationScenarios.all + TransferScenarios.all + GroupScenarios.all + CacheScenarios.all
        + ToolkitScenarios.all
        + SecurityScenarios.all

    /// The transport every scenario's dispatcher uses (`swift run Demo --curl` picks libcurl's).
    nonisolated(unsafe) static var transport = TransportFactory.urlSession

    /// Configures the shared dispatcher for `baseURL` (and ``transport``) and runs every scenario.
    /// Returns whether every expectation held.
    static func run(baseURL: URL, transcript: Transcript) async -> Bool {
        let transport = transport
        Dispatcher.shared.updateConfiguration {
            $0.baseURL = baseURL
            $0.transport = transport
        }
        for (index, scenario) in scenarios.enumerated() {
            transcript.say("")
            transcript.say("== \(index + 1). \(scenario.title)")
            await scenario.run(transcript)
        }
        return transcript.failed.isEmpty
    }
}

extension Dispatcher {
    /// Sends `request` and waits until its completion ran on the callback queue, which is after every
    /// observer's delivery of the same event on that queue.
    func sendAndWait<R: Request>(_ request: R) async -> Result<Response<R>, NetworkError> {
        await completion { send(request, completion: $0) }
    }
}

/// Starts a call that reports its one result to a closure, and waits for that result.
///
/// The result crosses in a lock as well as through the continuation. When the closure runs before this
/// task has suspended, the Swift runtime lets the task go on with no step the thread sanitizer can see
/// (swiftlang/swift#57803), and `swift test --sanitize=thread` then reports the response's fields,
/// written on the transport's thread, as raced with this task's read of them. The lock is that step.
/// (`Dispatcher.response(for:)` needs no such help: it marks its own hand-off.)
func completion<T: Sendable>(isolation: isolated (any Actor)? = #isolation, of start: (@escaping @Sendable (T) -> Void) -> Void) async -> T {
    let box = Locked<T?>(nil)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        start { result in
            box.withLock { $0 = result }
            continuation.resume()
        }
    }
    // The closure stored the result before it resumed the continuation.
    return box.withLock { $0! }
}
