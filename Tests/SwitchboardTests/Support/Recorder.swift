import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Switchboard

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
func eventually(timeout: TimeInterval = 5, _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout * timeScale)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
    return await condition()
}

/// Waits until `client` has no send in flight and its transport has reported the end of every
/// transfer it started (a cancelled one included): from then on, nothing can call back late. Tests
/// wait for this, not for a guessed pause, before they check that a callback came exactly once.
func settled(_ client: Dispatcher, timeout: TimeInterval = 30) async -> Bool {
    guard await settled(client.transportInUse, timeout: timeout) else { return false }
    return await eventually(timeout: timeout) { client.inFlightCount == 0 }
}

/// Waits until `transport` (URLSession's or libcurl's) has reported the end of every transfer.
func settled(_ transport: any Transport, timeout: TimeInterval = 30) async -> Bool {
    await eventually(timeout: timeout) {
        switch transport {
        case let transport as URLSessionTransport: transport.unreportedTasks == 0
        case let transport as CurlTransport: transport.unreportedTransfers == 0
        default: true
        }
    }
}
