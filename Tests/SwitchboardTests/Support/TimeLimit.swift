import Testing

/// A suite's time limit where the platform has `TimeLimitTrait` (macOS 13, iOS 16 and later, and
/// Linux); below that, as far back as the package's floor, the suite runs without one.
func timeLimit(minutes: Int) -> any SuiteTrait {
    if #available(macOS 13, iOS 16, tvOS 16, watchOS 9, *) {
        let limit: TimeLimitTrait = .timeLimit(.minutes(minutes))
        return limit
    }
    return NoTimeLimit()
}

/// No trait at all: what ``timeLimit(minutes:)`` gives where time limits don't exist.
struct NoTimeLimit: SuiteTrait, TestTrait {}
