import Foundation
import LoopbackServer

/// `swift run Demo`: starts the loopback server in this process and walks through every scenario,
/// printing a transcript. Exits 1 if a scenario did not behave as described.
@main
struct DemoMain {
    static func main() async {
        let server: LoopbackServer
        do {
            server = try LoopbackServer.standard()
        } catch {
            print("could not start the loopback server: \(error)")
            exit(2)
        }
        let transcript = Transcript(echo: true)
        transcript.say("Switchboard demo — loopback API at \(server.baseURL.absoluteString)")
        let passed = await DemoRunner.run(baseURL: server.baseURL, transcript: transcript)
        server.stop()
        transcript.say(passed ? "All scenarios behaved as described." : "SOME SCENARIOS FAILED (see above).")
        exit(passed ? 0 : 1)
    }
}
