import Foundation
import Switchboard

/// A screen on the main actor, registered by method reference: the Swift form of seed 002's
/// `addDelegate:` plus a callback selector.
@MainActor
final class ProfileScreen {
    private let transcript: Transcript
    private(set) var names: [String] = []

    init(transcript: Transcript) {
        self.transcript = transcript
        Dispatcher.shared.addObserver(self, for: GetUserInfo.self, calling: ProfileScreen.userInfoChanged)
    }

    func userInfoChanged(_ event: RequestEvent<GetUserInfo>) {
        guard case .succeeded(let response) = event.kind else { return }
        let name = response.json["user"]["name"].string ?? "?"
        names.append(name)
        transcript.say("  ProfileScreen (method reference, main actor) shows \(name)")
    }
}

/// An object on the main actor registered with a closure; counts the users it saw.
@MainActor
final class BadgeCounter {
    private(set) var count = 0
    let transcript: Transcript

    init(transcript: Transcript) {
        self.transcript = transcript
        Dispatcher.shared.addObserver(self, for: GetUserInfo.self) { counter, event in
            guard case .succeeded = event.kind else { return }
            counter.count += 1
            counter.transcript.say("  BadgeCounter (closure) counted \(counter.count)")
        }
    }
}

/// Listens for one response, then removes itself from inside its callback (seed 002: "remove yourself
/// from the set after the request ends").
@MainActor
final class OneShotListener {
    private(set) var calls = 0
    let transcript: Transcript

    init(transcript: Transcript) {
        self.transcript = transcript
        Dispatcher.shared.addObserver(self, for: GetUserInfo.self, calling: OneShotListener.done)
    }

    func done(_ event: RequestEvent<GetUserInfo>) {
        guard event.isTerminal else { return }
        calls += 1
        transcript.say("  OneShotListener got its answer and removes itself")
        Dispatcher.shared.removeObserver(self)
    }
}

/// An observer that is gone before the response comes.
@MainActor
final class ShortLivedObserver {
    let transcript: Transcript
    init(transcript: Transcript) {
        self.transcript = transcript
        Dispatcher.shared.addObserver(self, for: GetUserInfo.self, calling: ShortLivedObserver.changed)
    }
    func changed(_ event: RequestEvent<GetUserInfo>) {
        transcript.say("  ShortLivedObserver was called after it was deallocated (wrong)")
    }
}

enum ObserverScenarios {
    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "Two observers of GetUserInfo: a method reference and a closure") { transcript in
            let screen = await ProfileScreen(transcript: transcript)
            let counter = await BadgeCounter(transcript: transcript)
            let result = await Dispatcher.shared.sendAndWait(GetUserInfo(id: "123"))
            let names = await screen.names
            let count = await counter.count
            transcript.check(names == ["User 123"] && count == 1, "both observers received User 123")
            transcript.check((try? result.get().statusCode) == 200, "the send's own closure got the response too")
            Dispatcher.shared.removeObserver(screen)
            Dispatcher.shared.removeObserver(counter)
        },
        DemoRunner.Scenario(title: "An observer removes itself inside its callback") { transcript in
            let listener = await OneShotListener(transcript: transcript)
            let counter = await BadgeCounter(transcript: transcript)
            _ = await Dispatcher.shared.sendAndWait(GetUserInfo(id: "1"))
            _ = await Dispatcher.shared.sendAndWait(GetUserInfo(id: "2"))
            let (calls, count) = await (listener.calls, counter.count)
            transcript.check(calls == 1, "the listener heard the first response only")
            transcript.check(count == 2, "the other observer heard both")
            Dispatcher.shared.removeObserver(counter)
        },
        DemoRunner.Scenario(title: "A deallocated observer gets nothing") { transcript in
            var observer: ShortLivedObserver? = await ShortLivedObserver(transcript: transcript)
            weak var weakObserver = observer
            observer = nil
            _ = await Dispatcher.shared.sendAndWait(GetUserInfo(id: "7"))
            transcript.check(weakObserver == nil, "the observer was deallocated, and nothing called it")
            transcript.check(Dispatcher.shared.observerCount(for: GetUserInfo.self) == 0, "the registry pruned it")
        },
        DemoRunner.Scenario(title: "Two sends of one type at once, told apart by their send id") { transcript in
            let stream = Dispatcher.shared.events(for: GetUserInfo.self)
            let first = Dispatcher.shared.send(GetUserInfo(id: "1"))
            let second = Dispatcher.shared.send(GetUserInfo(id: "2"))
            var terminals: [UInt64: String] = [:]
            for await event in stream {
                if case .succeeded(let response) = event.kind { terminals[event.sendID] = response.json["user"]["id"].string }
                if terminals.count == 2 { break }
            }
            transcript.say("  send #\(first.id) → user \(terminals[first.id] ?? "?"), send #\(second.id) → user \(terminals[second.id] ?? "?")")
            transcript.check(terminals[first.id] == "1" && terminals[second.id] == "2", "each event names its send (RequestHandle.id == RequestEvent.sendID)")
        },
        DemoRunner.Scenario(title: "The async form, and an event stream") { transcript in
            let stream = Dispatcher.shared.events(for: GetUserInfo.self)
            do {
                let response = try await Dispatcher.shared.response(for: GetUserInfo(id: "42"))
                transcript.say("  await response(for:) → \(response.json["user"]["name"].string ?? "?"), nickname \(response.json["user"]["nickname"].string ?? "?")")
                transcript.check(response.json["user"]["id"].string == "42", "the decoded JSON is there, typed")
            } catch {
                transcript.check(false, "await response(for:) failed: \(error)")
            }
            var seen: [String] = []
            for await event in stream {
                switch event.kind {
                case .started: seen.append("started")
                case .succeeded: seen.append("succeeded")
                default: seen.append("other")
                }
                if event.isTerminal { break }
            }
            transcript.say("  the stream saw: \(seen.joined(separator: " → "))")
            transcript.check(seen == ["started", "succeeded"], "one start, one terminal event")
        },
    ]
}
