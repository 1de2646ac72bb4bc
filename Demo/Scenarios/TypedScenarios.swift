import Foundation
import Switchboard

/// A screen on the main actor that reads typed values: `event.response?.value` is a `UserEnvelope`.
@MainActor
final class TypedProfileScreen {
    private let transcript: Transcript
    private(set) var names: [String] = []

    init(transcript: Transcript) {
        self.transcript = transcript
        Dispatcher.shared.addObserver(self, for: GetUser.self, calling: TypedProfileScreen.userChanged)
    }

    func userChanged(_ event: RequestEvent<GetUser>) {
        guard let user = event.response?.value.user else { return }
        names.append(user.name)
        transcript.say("  TypedProfileScreen (method reference) shows \(user.name), level \(user.level): a User, no dictionary")
    }
}

/// A user shape the server doesn't send: `level` as a string.
struct MistypedUser: Decodable, Sendable {
    struct Inner: Decodable, Sendable { let level: String }
    let user: Inner
}

/// Typed requests: a response type per request, an `Encodable` body, the ad-hoc one-liners.
enum TypedScenarios {
    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "Typed requests: a User, an Encodable POST, a typed observer, one-liners") { transcript in
            let screen = await TypedProfileScreen(transcript: transcript)
            let result = await Dispatcher.shared.sendAndWait(GetUser(id: "7"))
            let names = await screen.names
            transcript.check((try? result.get().value.user.name) == "User 7" && names == ["User 7"], "the send and the observer both got a decoded User")
            Dispatcher.shared.removeObserver(screen)

            let registered = await Dispatcher.shared.sendAndWait(RegisterAccount(account: NewAccount(username: "ada", password: "lovelace")))
            let account = try? registered.get().value
            transcript.say("  POST /register with an Encodable body: userId \(account?.userId ?? "-")")
            transcript.check(account?.userId == "u-ada", "an Encodable body went as JSON and the answer came back typed")

            let oneLiner = try? await Dispatcher.shared.response(for: .get("/users/8", as: UserEnvelope.self)).value
            transcript.say("  .get(\"/users/8\", as: UserEnvelope.self): \(oneLiner?.user.name ?? "-")")
            transcript.check(oneLiner?.user.name == "User 8", "an ad-hoc typed request in one line")

            do {
                _ = try await Dispatcher.shared.response(for: .get("/users/9", as: MistypedUser.self))
                transcript.check(false, "a mistyped model must fail")
            } catch {
                transcript.say("  error: \(error)")
                transcript.check("\(error)".contains("user.level"), "a decode error names the type and where in the body")
            }
        }
    ]
}
