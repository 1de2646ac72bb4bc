import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process for the tests and the demo, started with `posix_spawn`, not Foundation's `Process`:
/// in Swift 6.3, `Process.run()` on Linux crashes now and then in `findMaximumOpenFromProcSelfFD()` (a
/// 256-byte over-read of `/proc/self/fd`'s entries, swift-corelibs-foundation#5472), which a test
/// process with many sockets open meets often. Every descriptor but the child's three standard ones
/// is closed in the child (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34; Darwin's
/// `POSIX_SPAWN_CLOEXEC_DEFAULT`), so it holds no socket of the parent's; its signals are unblocked (a
/// pool thread's mask would otherwise keep SIGTERM from it).
public final class ChildProcess: @unchecked Sendable {  // `@unchecked`: `pid` and the handles are set in init; `status` and `signal` are behind `lock`
    /// Where a standard stream goes.
    public enum Stream {
        /// A pipe: the parent reads (or, for standard input, writes) the other end.
        case pipe
        /// `/dev/null`.
        case null
        /// The standard output's pipe (standard error only).
        case output
        /// An open file.
        case file(FileHandle)
    }

    public let pid: pid_t
    /// The write end of standard input's pipe, or `nil`.
    public let input: FileHandle?
    /// The read end of standard output's pipe, or `nil`.
    public let output: FileHandle?
    /// The read end of standard error's own pipe (``Stream/pipe``), or `nil`.
    public let errorOutput: FileHandle?
    private let lock = NSLock()
    private var status: Int32?
    private var signal: Int32?

    /// Starts `executable` with `arguments` (not counting its name) and `environment` (`nil`: this
    /// process's).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, input inputStream: Stream = .null, output outputStream: Stream = .pipe,
        errors errorStream: Stream = .null
    ) throws {
        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #else
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // A thread of libdispatch's pool blocks most signals, and a child inherits its mask: without
        // this, SIGTERM would not end the child. Every signal unblocked, every disposition the default.
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        #if !canImport(Glibc)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)  // Darwin: nothing of this process's is inherited
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var childEnds: [Int32] = []
        defer { childEnds.forEach { _ = close($0) } }
        func pipeEnds() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw ChildProcessError("pipe: \(String(cString: strerror(errno)))") }
            // Close-on-exec: a child started elsewhere never holds these (ours close them anyway).
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            return (fds[0], fds[1])
        }
        /// A pipe whose write end becomes the child's `fd`; returns the parent's read end and the write end.
        func readablePipe(onto fd: Int32) throws -> (handle: FileHandle, write: Int32) {
            let ends = try pipeEnds()
            posix_spawn_file_actions_adddup2(&actions, ends.write, fd)
            childEnds.append(ends.write)
            return (FileHandle(fileDescriptor: ends.read, closeOnDealloc: true), ends.write)
        }
        let devNull = "/dev/null"
        var inputHandle: FileHandle?
        switch inputStream {
        case .pipe:
            let ends = try pipeEnds()
            posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
            childEnds.append(ends.read)
            inputHandle = FileHandle(fileDescriptor: ends.write, closeOnDealloc: true)
        case .file(let handle):
            posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, 0)
        case .null, .output:
            posix_spawn_file_actions_addopen(&actions, 0, devNull, O_RDONLY, 0)
        }
        var outputHandle: FileHandle?
        var outputWrite: Int32 = -1
        switch outputStream {
        case .pipe, .output:
            (outputHandle, outputWrite) = try readablePipe(onto: 1)
        case .file(let handle):
            posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, 1)
        case .null:
            posix_spawn_file_actions_addopen(&actions, 1, devNull, O_WRONLY, 0)
        }
        var errorHandle: FileHandle?
        switch errorStream {
        case .output where outputWrite >= 0:
            posix_spawn_file_actions_adddup2(&actions, outputWrite, 2)
        case .output:
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        case .pipe:
            errorHandle = try readablePipe(onto: 2).handle
        case .file(let handle):
            posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, 2)
        case .null:
            posix_spawn_file_actions_addopen(&actions, 2, devNull, O_WRONLY, 0)
        }
        // Nothing else of this process's reaches the child (its sockets, other children's pipes): a
        // child holding a test's socket would keep a port bound and a connection from ever closing.
        #if canImport(Glibc)
        guard let closeFrom = Self.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw ChildProcessError("posix_spawn_file_actions_addclosefrom_np (glibc 2.34) is not available: a child would inherit this process's descriptors")
        }
        #endif
        let environmentLines = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var child: pid_t = 0
        let result = Self.withCStrings([executable] + arguments) { argv in
            Self.withCStrings(environmentLines) { envp in
                posix_spawn(&child, executable, &actions, &attributes, argv, envp)
            }
        }
        guard result == 0 else {
            // The parent's ends belong to their handles, which close them.
            throw ChildProcessError("posix_spawn \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
        input = inputHandle
        output = outputHandle
        errorOutput = errorHandle
    }

    /// Whether the child still runs (it is reaped here once it ended).
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// Waits for the child to end; its exit status (or 128 + the signal that ended it).
    @discardableResult
    public func wait() -> Int32 { reap(blocking: true) ?? -1 }

    /// Waits at most `seconds` for the child to end; `false` when it still runs.
    public func wait(upTo seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning {
            if Date() >= deadline { return false }
            usleep(20_000)
        }
        return true
    }

    /// The signal that ended the child, if one did (a crash), once it ended.
    public var terminationSignal: Int32? {
        _ = reap(blocking: false)
        lock.lock()
        defer { lock.unlock() }
        return signal
    }

    /// Sends SIGTERM (then the caller may `wait()`).
    public func terminate() { send(SIGTERM) }

    /// Sends SIGKILL.
    public func kill() { send(SIGKILL) }

    /// Runs `executable` to its end; its status and everything it wrote to standard output (and
    /// standard error, with `mergingErrors`).
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, mergingErrors: Bool = false) throws -> (
        status: Int32, output: String
    ) {
        let child = try ChildProcess(executable, arguments, environment: environment, errors: mergingErrors ? .output : .null)
        let text = String(decoding: child.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        return (child.wait(), text)
    }

    /// The first line the child writes to standard output (without its newline); "" at its end.
    public func readLine() -> String {
        var line = Data()
        while let output {
            let byte = output.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// The child's status once it ended (reaping it then), or `nil` while it runs. Blocking waits in
    /// short sleeps, never holding the lock while it sleeps, so `terminate()` works meanwhile.
    private func reap(blocking: Bool) -> Int32? {
        while true {
            if let ended = reapOnce() { return ended }
            if !blocking { return nil }
            usleep(5_000)
        }
    }

    private func reapOnce() -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &raw, WNOHANG) } while result == -1 && errno == EINTR
        if result == -1 {
            status = -1  // ECHILD: reaped elsewhere; it has ended
            return status
        }
        guard result == pid else { return nil }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (the macros don't import).
        let ending = raw & 0x7F
        status = ending == 0 ? (raw >> 8) & 0xFF : 128 + ending
        if ending != 0 { signal = ending }
        return status
    }

    /// Sends `signal` unless the child was reaped (then its pid may be another process's).
    private func send(_ signalNumber: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if status == nil { Self.signal(pid, signalNumber) }
    }

    deinit {
        // Never left running or a zombie: a child dropped while it runs is killed and reaped.
        if status == nil, reapOnce() == nil {
            Self.signal(pid, SIGKILL)
            var raw: Int32 = 0
            _ = waitpid(pid, &raw, 0)
        }
    }

    /// `kill(2)` (the method of that name is this class's).
    private static func signal(_ pid: pid_t, _ number: Int32) {
        #if canImport(Glibc)
        _ = Glibc.kill(pid, number)
        #else
        _ = Darwin.kill(pid, number)
        #endif
    }

    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32).self)
    }()

    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        var pointers = strings.map { strdup($0) }
        pointers.append(nil)
        defer { pointers.forEach { free($0) } }
        return body(pointers)
    }
}

/// A child process that could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
