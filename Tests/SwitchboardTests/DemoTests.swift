import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Demo

/// Runs the demo's scenarios (the same code `swift run Demo` runs) and checks the transcript.
@Suite struct DemoTests {
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
            ] {
                #expect(text.contains(expected), "transcript lacks \(expected.debugDescription)")
            }
            #expect(!text.contains("ShortLivedObserver was called"))
            #expect(transcript.all.filter { $0.hasPrefix("== ") }.count == DemoRunner.scenarios.count)
        }
    }
}
