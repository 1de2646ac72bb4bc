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
