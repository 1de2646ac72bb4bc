import Dispatch
import Foundation
import LoopbackServer

/// Type-checks Swift snippets against the built `Switchboard` module with the toolchain's own
/// compiler, in Swift 6 mode, as an app would compile them.
enum TypeChecker {
    struct Outcome: Sendable {
        let status: Int32
        let output: String
        var errors: [String] { output.split(separator: "\n").map(String.init).filter { $0.contains("error:") } }
        var warnings: [String] { output.split(separator: "\n").map(String.init).filter { $0.contains("warning:") } }
    }

    /// The folder with `Switchboard.swiftmodule`: `Modules` beside the test bundle.
    static var modulesDirectory: URL? {
        let bundle = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        let candidates = [bundle.appendingPathComponent("Modules"), bundle]
        return candidates.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("Switchboard.swiftmodule").path) }
    }

    /// The compiler: `swiftc` beside the running toolchain's `swift`, or on the `PATH`.
    static var compiler: String {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/swiftc"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return "/usr/bin/swiftc"
    }

    /// Type-checks `source` (a whole file) and returns the compiler's status and output. The compiler
    /// is waited for on a queue of its own, not on Swift's cooperative pool (two threads on this
    /// machine), so other tests keep running meanwhile; and one compiler runs at a time, since seven
    /// at once at the suite's start starved every other test of CPU (a 0.2 s timeout took 22 s in CI).
    static func check(_ source: String) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            compilerQueue.async {
                continuation.resume(with: Result { try checkBlocking(source) })
            }
        }
    }

    private static let compilerQueue = DispatchQueue(label: "switchboard.tests.typechecker")

    #if os(Linux)
    /// Builds `source` (a main file) into an executable linked with the built `Switchboard` and
    /// `SwitchboardTesting` objects, runs it with `arguments`, and returns the build's outcome when it
    /// fails, else the run's (its status and output; killed after `timeout` seconds, status -1).
    /// Linux only: elsewhere the objects are not laid out beside the test bundle.
    static func run(_ source: String, arguments: [String] = [], timeout: TimeInterval) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            compilerQueue.async {
                continuation.resume(with: Result { try runBlocking(source, arguments: arguments, timeout: timeout) })
            }
        }
    }

    private static func runBlocking(_ source: String, arguments: [String], timeout: TimeInterval) throws -> Outcome {
        guard let modules = modulesDirectory else { throw CheckerError("no Switchboard.swiftmodule beside \(CommandLine.arguments.first ?? "?")") }
        let binaries = modules.lastPathComponent == "Modules" ? modules.deletingLastPathComponent() : modules
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-sample-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("main.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        var objects: [String] = []
        for target in ["Switchboard", "SwitchboardTesting", "CSwitchboardAtomics"] {
            let folder = binaries.appendingPathComponent("\(target).build")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            objects += names.filter { $0.hasSuffix(".o") }.sorted().map { folder.appendingPathComponent($0).path }
        }
        guard !objects.isEmpty else { throw CheckerError("no objects of Switchboard in \(binaries.path)") }
        let executable = directory.appendingPathComponent("sample")
        let base =
            ["-swift-version", "6", "-I", modules.path, "-I", includeDirectory.path, "-module-cache-path", directory.appendingPathComponent("cache").path, file.path]
            + objects + ["-o", executable.path]
        var build = try launch(compiler, base, timeout: 600)
        // Objects built by `swift test --sanitize=…` need that sanitizer's runtime in the executable.
        for (symbol, flag) in [("__tsan_", "-sanitize=thread"), ("__asan_", "-sanitize=address")] where build.status != 0 && build.output.contains(symbol) {
            build = try launch(compiler, [flag] + base, timeout: 600)
        }
        guard build.status == 0 else { return build }
        return try launch(executable.path, arguments, timeout: timeout)
    }

    private static func launch(_ path: String, _ arguments: [String], timeout: TimeInterval) throws -> Outcome {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-sample-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        let process = try ChildProcess(path, arguments, output: .file(handle), errors: .file(handle))
        var timedOut = false
        if !process.wait(upTo: timeout) {
            timedOut = true
            process.terminate()
            if !process.wait(upTo: 5) { process.kill() }
        }
        let status = process.wait()
        try? handle.close()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return Outcome(status: timedOut ? -1 : status, output: timedOut ? "timed out after \(timeout) s\n" + text : text)
    }
    #endif

    /// Switchboard's C target (its atomics): SwiftPM passes its module map to every client; so do we
    /// (the target's include folder, with its module map, beside this package's sources).
    private static var includeDirectory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/CSwitchboardAtomics/include")
    }

    private static func checkBlocking(_ source: String) throws -> Outcome {
        guard let modules = modulesDirectory else { throw CheckerError("no Switchboard.swiftmodule beside \(CommandLine.arguments.first ?? "?")") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-typecheck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("snippet.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        var arguments = ["-typecheck", "-swift-version", "6", "-I", modules.path, "-module-cache-path", directory.appendingPathComponent("cache").path]
        arguments += ["-I", includeDirectory.path]
        let (status, output) = try ChildProcess.run(compiler, arguments + [file.path], mergingErrors: true)
        return Outcome(status: status, output: output)
    }

    struct CheckerError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
