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
        await withCheckedContinuation { continuation in
            send(request) { continuation.resume(returning: $0) }
        }
    }
}
