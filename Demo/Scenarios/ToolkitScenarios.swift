import Dispatch
import Foundation
import Switchboard

/// The observer toolkit: identical requests coalesced, a screen's requests cancelled with it, and the
/// bus of all requests.
enum ToolkitScenarios {
    /// The feed, slow enough that ten taps land while the first is still loading.
    struct GetFeed: Request {
        /// The feed's name on the server (each run of the demo asks for a feed of its own).
        let name: String
        var path: String { "/concurrent/\(name)?ms=300" }
    }

    /// How many requests reached a path, as the server counted them.
    struct ServerHits: Request {
        let countedPath: String
        var path: String { "/hits" }
        var parameters: JSON? { ["path": .string(countedPath)] }
        var coalescesDuplicates: Bool { false }
    }

    /// A slow user info, for a screen that closes before it arrives.
    struct SlowUserInfo: Request {
        var path: String { "/delay/5000" }
    }

    /// A screen that owns the requests it makes.
    final class DetailScreen: Sendable {
        func load(_ done: @escaping @Sendable (Result<Response<SlowUserInfo>, NetworkError>) -> Void) -> RequestHandle {
            Dispatcher.shared.send(SlowUserInfo(), owner: self, completion: done)
        }
    }

    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "Ten identical GETs in flight at once share one transfer (coalescing)") { transcript in
            let results = Locked([Int]())
            let group = DispatchGroup()
            let started = Date()
            let feed = "demo-feed-\(UUID().uuidString.prefix(8))"
            for _ in 0..<10 {
                group.enter()
                Dispatcher.shared.send(GetFeed(name: feed)) { result in
                    results.withLock { $0.append((try? result.get())?.sendID == nil ? 0 : 1) }
                    group.leave()
                }
            }
            await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
            let elapsed = Int(Date().timeIntervalSince(started) * 1000)
            let hits = (try? await Dispatcher.shared.sendAndWait(ServerHits(countedPath: "/concurrent/\(feed)")).get())?.json["hits"].int ?? -1
            let succeeded = results.withLock { $0.reduce(0, +) }
            transcript.say("  10 sends, \(succeeded) responses in \(elapsed) ms; the server counted \(hits) request\(hits == 1 ? "" : "s")")
            transcript.check(succeeded == 10 && hits == 1, "ten sends, ten responses, one request on the wire")
        },
        DemoRunner.Scenario(title: "A screen closed mid-request takes its request with it (send(_:owner:))") { transcript in
            var screen: DetailScreen? = DetailScreen()
            let outcome = Locked<(NetworkError?, Date?)>((nil, nil))
            let finished = DispatchSemaphore(value: 0)
            let handle = screen!.load { result in
                outcome.withLock { $0 = (result.failure, Date()) }
                finished.signal()
            }
            try? await Task.sleep(nanoseconds: 100_000_000)
            let running = Dispatcher.shared.runningRequests.filter { $0.id == handle.id }
            transcript.say("  running: \(running.map(\.description).joined(separator: "; "))")
            let closed = Date()
            screen = nil
            transcript.say("  the screen is closed (deallocated)")
            let ended = await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: finished.wait(timeout: .now() + 3) == .success) }
            }
            let (error, at) = outcome.withLock { $0 }
            let after = at.map { Int($0.timeIntervalSince(closed) * 1000) } ?? -1
            transcript.say("  its request ended: \(error.map { "\($0)" } ?? "no error") \(after) ms later")
            transcript.check(ended && error?.isCancelled == true && running.first?.hasOwner == true, "the request was cancelled when its owner went away")
        },
        DemoRunner.Scenario(title: "One stream logs every event of every request (the bus of all requests)") { transcript in
            let logged = Locked([String]())
            let stream = Dispatcher.shared.allEvents()
            let logger = Task {
                for await event in stream {
                    transcript.say("  [bus] \(event)")
                    logged.withLock { $0.append(event.requestTypeName + (event.isTerminal ? " end" : " start")) }
                }
            }
            _ = await Dispatcher.shared.sendAndWait(GetUserInfo(id: "123"))
            _ = await Dispatcher.shared.sendAndWait(BrokenEndpoint())
            let slow = Dispatcher.shared.send(SlowUserInfo())
            slow.cancel()
            for _ in 0..<100 where logged.withLock({ $0.count }) < 6 { try? await Task.sleep(nanoseconds: 10_000_000) }
            logger.cancel()
            let seen = logged.withLock { $0 }
            transcript.check(
                seen.filter { $0.hasSuffix(" end") }.count == 3 && seen.contains("BrokenEndpoint end") && seen.contains("SlowUserInfo end"),
                "one stream heard three request types, each from start to end"
            )
        },
    ]
}
