import Testing

/// Every suite's guard against a hang: a test still running after ten minutes fails instead of holding
/// the run. It is not a measure of speed. Swift Testing starts the whole suite at once, so on a loaded
/// two-core machine a test's wall time approaches the whole run's: beside a release build the suite
/// took 134 s, and a one-minute limit failed 231 tests that take under a second alone. Tests wait on
/// events; this only ends one that would wait forever. Where the platform has no `TimeLimitTrait`
/// (below macOS 13 / iOS 16), suites run without it.
let hangGuard: any SuiteTrait = {
    if #available(macOS 13, iOS 16, tvOS 16, watchOS 9, *) {
        let limit: TimeLimitTrait = .timeLimit(.minutes(10))
        return limit
    }
    return NoTimeLimit()
}()

/// No trait at all: what ``hangGuard`` is where time limits don't exist.
struct NoTimeLimit: SuiteTrait, TestTrait {}
