import Foundation
import Switchboard

enum ErrorScenarios {
    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "A 500 becomes a typed error that carries its body") { transcript in
            let result = await Dispatcher.shared.sendAndWait(BrokenEndpoint())
            switch result {
            case .success:
                transcript.check(false, "a 500 should not succeed")
            case .failure(let error):
                transcript.say("  error: \(error)")
                transcript.check(error.statusCode == 500, "status code 500")
                transcript.check(error.errorResponse?.json?["message"].string == "status 500", "the body is kept: {\"message\": \"status 500\"}")
            }
        },
        DemoRunner.Scenario(title: "Bad input fails before anything is sent") { transcript in
            let injected = await Dispatcher.shared.sendAndWait(OddMethod(method: HTTPMethod(rawValue: "GET /x HTTP/1.1\r\nX-Injected: yes")))
            transcript.say("  a method with CR/LF: \(injected.failure.map { "\($0)" } ?? "sent (wrong)")")
            transcript.check(injected.failure.map { if case .invalidRequest = $0 { true } else { false } } == true, "invalidRequest, nothing on the wire")
            let local = await Dispatcher.shared.sendAndWait(LocalFile())
            transcript.say("  a file: path: \(local.failure.map { "\($0)" } ?? "sent (wrong)")")
            transcript.check(local.failure.map { if case .invalidRequest = $0 { true } else { false } } == true, "other schemes are refused, not sent as a relative path")
        },
    ]
}
