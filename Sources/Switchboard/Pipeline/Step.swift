/// A stage's answer: its value now, or the asynchronous work that gives it (an interceptor's token
/// refresh, a disk read), which the driver runs in a task (the interceptors' it cancels on a cancel or
/// the deadline; a disk read it lets finish, and drops what it finds once the attempt has ended). Every
/// stage has one entry point either way, and a send that needs no asynchronous work makes no task.
enum Step<Value: Sendable>: Sendable {
    case now(Value)
    case later(@Sendable () async -> Value)

    var isLater: Bool {
        if case .later = self { true } else { false }
    }
}
