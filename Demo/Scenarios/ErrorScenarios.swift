import Foundation
import Switchboard

enum ErrorScenarios {
    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "A 500 becomes a typed error that carries its body") { transcript in
            let result = await Switchboard.shared.sendAndWait(BrokenEndpoint())
            switch result {
            case .success:
                transcript.check(false, "a 500 should not succeed")
            case .failure(let error):
                transcript.say("  error: \(error)")
                transcript.check(error.statusCode == 500, "status code 500")
                transcript.check(error.errorResponse?.json?["message"].string == "status 500", "the body is kept: {\"message\": \"status 500\"}")
            }
        },
    ]
}
