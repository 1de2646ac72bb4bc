import Foundation
import LoopbackServer
import Switchboard

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
        var transportName = "URLSession"
        if CommandLine.arguments.contains("--curl") {
            // `swift run Demo --curl`: every scenario on the libcurl transport (Linux).
            do {
                DemoRunner.transport = try TransportFactory.curlIfAvailable()
                #if canImport(Glibc)
                transportName = "libcurl \(CurlTransport.libraryVersion ?? "")"
                #endif
            } catch {
                print("\(error)")
                exit(2)
            }
        }
        transcript.say("Switchboard demo — loopback API at \(server.baseURL.absoluteString), transport: \(transportName)")
        let passed = await DemoRunner.run(baseURL: server.baseURL, transcript: transcript)
        server.stop()
        transcript.say(passed ? "All scenarios behaved as described." : "SOME SCENARIOS FAILED (see above).")
        exit(passed ? 0 : 1)
    }
}
