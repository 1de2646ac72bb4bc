import Foundation
import Switchboard
import SwitchboardTesting
import XCTest

/// `SwitchboardTesting` from XCTest, the way an app's older test suites use it.
final class RecordingObserverXCTests: XCTestCase {
    func testAStubbedSendIsRecordedAndAwaitedInXCTest() async throws {
        let stub = StubTransport()
        stub.on(Ping.self, answer: .json(["user": ["name": "Ada"]], delay: 0.05))
        let client = Dispatcher.stubbed(stub)
        let recorder = RecordingObserver<Ping>()
        recorder.observe(client)
        let handle = client.send(Ping())
        let event = try await recorder.terminalEvent(ofSend: handle.id)
        XCTAssertEqual(event.response?.json["user"]["name"].string, "Ada")
        XCTAssertEqual(recorder.events(ofSend: handle.id).count, 2)
        XCTAssertEqual(stub.recorded(of: Ping.self).count, 1)
    }

    func testATimeoutIsAThrownErrorXCTestReports() async {
        let recorder = RecordingObserver<Ping>()
        do {
            _ = try await recorder.events(count: 1, timeout: 0.05)
            XCTFail("expected a timeout")
        } catch {
            XCTAssertTrue("\(error)".contains("no 1 events within 0.05 s"), "\(error)")
        }
    }

    func testARuleWithNoAnswersFailsTheRequestClearly() async {
        let stub = StubTransport()
        stub.on(Ping.self, answers: [])
        let client = Dispatcher.stubbed(stub)
        let failure = await withCheckedContinuation { continuation in
            client.send(Ping()) { continuation.resume(returning: $0.failure) }
        }
        guard case .invalidRequest(let reason)? = failure else { return XCTFail("got \(String(describing: failure))") }
        XCTAssertTrue(reason.contains("no answers"), reason)
    }
}
