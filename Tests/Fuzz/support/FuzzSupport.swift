// Helpers shared by the harnesses (compiled into every fuzzer binary).
import Foundation

/// Invariant checks that have already been reported can be switched off so the fuzzer keeps looking
/// for other problems: `FUZZ_IGNORE=lookup,leak ./fuzz_headers ...`.
let ignoredChecks: Set<String> = Set(
    (ProcessInfo.processInfo.environment["FUZZ_IGNORE"] ?? "").split(separator: ",").map(String.init)
)

/// Traps (so libFuzzer saves a reproducer) when `condition` is false, unless `name` is ignored.
@inline(__always)
func expect(_ name: String, _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !ignoredChecks.contains(name) && !condition() {
        fatalError("[\(name)] \(message())")
    }
}

/// The input as text (ill-formed UTF-8 becomes U+FFFD).
func inputText(_ data: UnsafePointer<UInt8>, _ size: Int) -> String {
    String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
}

/// Splits the input at the first `separator` byte: (before, after); `after` is nil without one.
func splitOnce(_ data: UnsafePointer<UInt8>, _ size: Int, at separator: UInt8) -> (String, String?) {
    let buffer = UnsafeBufferPointer(start: data, count: size)
    guard let index = buffer.firstIndex(of: separator) else {
        return (String(decoding: buffer, as: UTF8.self), nil)
    }
    let head = String(decoding: UnsafeBufferPointer(rebasing: buffer[..<index]), as: UTF8.self)
    let tail = String(decoding: UnsafeBufferPointer(rebasing: buffer[(index + 1)...]), as: UTF8.self)
    return (head, tail)
}

// The package's C target is not compiled into the fuzzers (only its header is read): its two thread
// sanitizer annotations (CSwitchboardAtomics.c), as the no-ops they are without that sanitizer.
@_cdecl("sb_tsan_release") func fuzzSanitizerRelease(_ address: UnsafeRawPointer?) {}
@_cdecl("sb_tsan_acquire") func fuzzSanitizerAcquire(_ address: UnsafeRawPointer?) {}
