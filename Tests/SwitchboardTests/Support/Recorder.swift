import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Switchboard
import SwitchboardTesting
import Testing

/// An observer class for registry tests: records what it hears, thread-safely.
final class Listener: Sendable {
    let log = Box<[String]>([])
    let threadWasMain = Box<[Bool]>([])

    func heard(_ event: RequestEvent<Ping>) {
        log.mutate { $0.append(Listener.name(event)) }
        threadWasMain.mutate { $0.append(Thread.isMainThread) }
    }

    func heardPong(_ event: RequestEvent<Pong>) {
        log.mutate { $0.append("pong-" + Listener.name(event)) }
    }

    static func name<R>(_ event: RequestEvent<R>) -> String {
        switch event.kind {
        case .started: "started"
        case .progress: "progress"
        case .cached: "cached"
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}

/// A main-actor observer.
@MainActor
final class MainActorListener {
    var events: [String] = []
    func heard(_ event: RequestEvent<Ping>) {
        MainActor.assertIsolated()
        events.append(Listener.name(event))
    }
}

/// Waits (polling, bounded) until `condition` holds; returns whether it did.
///
/// The polls back off, from 1 ms to 25 ms apart: the whole suite runs at once, and a hundred tests
/// polling every 2 ms kept one of the concurrency pool's two threads busy with their wake-ups alone, so
/// every other task (the library's own among them) waited seconds for a turn.
///
/// The bound is for a hang, not for slowness, so it counts only the time the process could run: a
/// poll that comes back after more than a quarter of a second was a process starved of CPU (a loaded
/// 2-core machine, another build beside the tests: 20–40 s in which even a test of pure arithmetic did
/// not finish), and counts as a quarter of a second. A send that hangs still fails the wait after
/// `timeout` (scaled under sanitizers) of polls.
func eventually(timeout: TimeInterval = 5, _ condition: @Sendable () async -> Bool) async -> Bool {
    var budget = timeout * timeScale
    var last = DispatchTime.now().uptimeNanoseconds
    var pause: UInt64 = 1_000_000
    while budget > 0 {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: pause)
        pause = min(pause * 2, 25_000_000)
        let now = DispatchTime.now().uptimeNanoseconds
        budget -= min(Double(now - last) / 1e9, 0.25)
        last = now
    }
    return await condition()
}

/// Waits until `client` has no send in flight and its transport has reported the end of every
/// transfer it started (a cancelled one included), then checks the first again: from then on, nothing
/// can call back late (with ``CallbackQueue/immediate`` delivery, as the tests' clients have). Tests
/// wait for this, not for a guessed pause, before they check that a callback came exactly once.
func settled(_ client: Dispatcher, timeout: TimeInterval = 30) async -> Bool {
    guard await eventually(timeout: timeout, { client.inFlightCount == 0 }) else { return false }
    // No transport yet: nothing was ever sent.
    guard let transport = client.transportInUse else { return client.inFlightCount == 0 }
    guard await settled(transport, timeout: timeout) else { return false }
    return client.inFlightCount == 0
}

/// Waits until `transport` (URLSession's, libcurl's or the stub) has returned from every transfer's
/// completion, and (URLSession) URLSession has reported every task's end. Records an issue for a
/// transport it can't look into: a test must not believe it waited.
func settled(_ transport: any Transport, timeout: TimeInterval = 30, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
    let count: @Sendable () -> Int
    switch transport {
    case let transport as URLSessionTransport: count = { transport.unreportedTasks + transport.unfinishedTransfers }
    case let transport as CurlTransport: count = { transport.unreportedTransfers }
    case let transport as StubTransport: count = { transport.pendingAnswers }
    default:
        Issue.record("settled(_:) can't tell when a \(type(of: transport)) has called back for the last time", sourceLocation: sourceLocation)
        return false
    }
    return await eventually(timeout: timeout) { count() == 0 }
}
