import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing
@testable import Demo

/// Runs the demo's scenarios (the same code `swift run Demo` runs) and checks the transcript.
@Suite(hangGuard, admission) struct DemoTests {
    @Test func everyDemoScenarioBehavesAsDescribed() async throws {
        try await withServer { server in
            let transcript = Transcript(echo: false)
            let passed = await DemoRunner.run(baseURL: server.baseURL, transcript: transcript)
            #expect(transcript.failed == [])
            #expect(passed)
            let text = transcript.all.joined(separator: "\n")
            for expected in [
                "ProfileScreen (method reference, main actor) shows User 123",
                "BadgeCounter (closure) counted 1",
                "OneShotListener got its answer and removes itself",
                "await response(for:) → User 42, nickname nick42",
                "the stream saw: started → succeeded",
                "error: HTTP 500:",
                "the server saw version=3.2.1",
                "X-Client: switchboard-demo, X-Device: linux, X-App: Switchboard Demo",
                "the server unpacked 50 events sent with Content-Encoding: gzip", "the body was really compressed (zlib, loaded at run time)",
                "list: Item 0, Item 1, Item 2",
                "log: ← 200 GET",
                "a failure is a typed error (HTTP 404), never an empty dictionary",
                "the image arrived whole, and the validator accepted the reply",
                "three images, each with its own MIME type, and the parameters as fields",
                "images[1] is not a JPEG, PNG, GIF, WebP or HEIC image",
                "] 100% (8192 KiB)",
                "the second attempt asked only for the rest, and the file is whole",
                "four responses, in order, each its own type: no casting",
                "the send and the observer both got a decoded User",
                "an Encodable body went as JSON and the answer came back typed",
                "an ad-hoc typed request in one line",
                "a decode error names the type and where in the body",
                "fail-fast: the batch reports the member that failed",
                "the second request was built from the first's response",
                "every node ran after its dependencies; the last was built from two of them",
                "a cycle is refused before anything is sent",
                "the stored user info at once, then the fresh one",
                "network-else-cache shows the stored data when the network is down",
                "error: $.user.id: expected integer, found string",
                "error: API error 3: session expired",
                "1 refresh; each retried: attempts 2 and 2",
                "the server failed twice with 503, then answered: attempt 3",
            ] {
                #expect(text.contains(expected), "transcript lacks \(expected.debugDescription)")
            }
            // The security scenario needs python3 for its HTTPS server (as the trust suites do).
            if TLSLab.unavailable == nil {
                for expected in ["✓ the pinned request succeeds", "✓ a wrong pin is refused, and the error says which check failed"] {
                    #expect(text.contains(expected), "transcript lacks \(expected.debugDescription)")
                }
            }
            #expect(!text.contains("ShortLivedObserver was called"))
            #expect(transcript.all.filter { $0.hasPrefix("== ") }.count == DemoRunner.scenarios.count)

            // `swift run Demo --curl`: every scenario again, on the libcurl transport (after the run above:
            // both use the shared dispatcher).
            guard TransportUnderTest.curlOptOut == nil else { return }  // opted out, and said so (TransportUnderTest)
            let curl = try TransportFactory.curlIfAvailable()
            DemoRunner.transport = curl
            defer { DemoRunner.transport = .urlSession }
            let onCurl = Transcript(echo: false)
            let passedOnCurl = await DemoRunner.run(baseURL: server.baseURL, transcript: onCurl)
            #expect(onCurl.failed == [], "on libcurl")
            #expect(passedOnCurl)
        }
    }
}
