import Foundation
import Switchboard
import Testing

/// Whether this test binary was built with the sanitizer whose runtime defines `symbol`.
private func runsUnderSanitizer(_ symbol: String) -> Bool {
    #if canImport(Glibc)
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) != nil
    #else
    false
    #endif
}

/// Whether this test binary runs under the thread sanitizer (everything is 5–20 times slower there, so
/// load tests run smaller).
let runsUnderThreadSanitizer = runsUnderSanitizer("__tsan_init")

/// Whether this test binary runs under the address sanitizer.
let runsUnderAddressSanitizer = runsUnderSanitizer("__asan_init")

/// How much longer waits and time bounds are under a sanitizer: everything runs several times slower
/// there, and a test that spends a second of CPU takes several from the others. The bounds catch
/// hangs (a send that waits for a 60 s answer, a deadline that never fires), not slowness; scaled,
/// each stays below what it guards against (30 s → 54 s, under a 60 s answer).
let timeScale: Double = runsUnderThreadSanitizer || runsUnderAddressSanitizer ? 1.8 : 1

/// Records an issue unless `error` matches `pattern`; returns whether it did.
@discardableResult
func expectError(
    _ error: NetworkError?,
    _ matches: (NetworkError) -> Bool,
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    guard let error, matches(error) else {
        Issue.record("expected \(what), got \(String(describing: error))", sourceLocation: sourceLocation)
        return false
    }
    return true
}

extension NetworkError {
    var isInvalidRequest: Bool { if case .invalidRequest = self { true } else { false } }
    var isTransport: Bool { if case .transport = self { true } else { false } }
    var apiError: APIError? { if case .api(let error) = self { error } else { nil } }
    var shapeMismatch: JSONShapeMismatch? { if case .jsonShape(let mismatch) = self { mismatch } else { nil } }
    var invalidReason: String? { if case .invalidRequest(let reason) = self { reason } else { nil } }
}
