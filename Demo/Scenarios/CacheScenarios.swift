import Foundation
import LoopbackServer
import Switchboard

/// YTKNetwork's "load cache data": the stored user info at once, then the fresh one; and the stored
/// data again when the server is gone.
enum CacheScenarios {
    /// The user info, cached for five minutes: the stored copy first, then the network's.
    struct CachedUserInfo: Request {
        let id: String
        var mode: CachePolicy.Mode = .cachedThenLoad
        var path: String { "/counter/user-\(id)" }
        var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 300, mode: mode) }
    }

    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "The last cached content first, then the latest; the cache again when the network is down (loadCacheData)") { transcript in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-demo-cache-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            // A server of its own, to stop it halfway.
            guard let server = try? LoopbackServer.standard() else {
                transcript.check(false, "could not start a second server")
                return
            }
            let client = Dispatcher(
                configuration: Configuration {
                    $0.baseURL = server.baseURL
                    $0.transport = DemoRunner.transport
                    $0.cache = ResponseCache(directory: folder)
                })
            let screen = UserScreen()
            let token = client.addObserver(screen, for: CachedUserInfo.self, on: .immediate) { screen, event in screen.show(event) }
            let shown = screen.shown
            _ = await sendAndWait(client, CachedUserInfo(id: "1"))
            transcript.say("  first send: \(shown.withLock { $0 }.joined(separator: ", "))")
            shown.withLock { $0 = [] }
            _ = await sendAndWait(client, CachedUserInfo(id: "1"))
            let second = shown.withLock { $0 }
            transcript.say("  second send: \(second.joined(separator: ", then "))")
            transcript.check(second == ["cached 1", "network 2"], "the stored user info at once, then the fresh one")
            server.stop()
            let offline = await sendAndWait(client, CachedUserInfo(id: "1", mode: .networkElseCache))
            let stale = (try? offline.get()).map { "\($0.source), count \($0.json["count"].int ?? 0)" } ?? "\(offline)"
            transcript.say("  with the server stopped: \(stale)")
            transcript.check((try? offline.get())?.source == .stale, "network-else-cache shows the stored data when the network is down")
            token.cancel()
        }
    ]

    /// What a screen showing the user info would show, in order.
    final class UserScreen: Sendable {
        let shown = Locked([String]())

        func show(_ event: RequestEvent<CachedUserInfo>) {
            switch event.kind {
            case .cached(let stored): shown.withLock { $0.append("cached \(stored.json["count"].int ?? 0)") }
            case .succeeded(let response): shown.withLock { $0.append("\(response.source) \(response.json["count"].int ?? 0)") }
            default: break
            }
        }
    }

    private static func sendAndWait<R: Request>(_ client: Dispatcher, _ request: R) async -> Result<Response<R>, NetworkError> {
        await completion { client.send(request, completion: $0) }
    }
}
