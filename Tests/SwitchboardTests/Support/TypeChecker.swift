import Dispatch
import Foundation

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

    private static func checkBlocking(_ source: String) throws -> Outcome {
        guard let modules = modulesDirectory else { throw CheckerError("no Switchboard.swiftmodule beside \(CommandLine.arguments.first ?? "?")") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-typecheck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("snippet.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: compiler)
        var arguments = ["-typecheck", "-swift-version", "6", "-I", modules.path, "-module-cache-path", directory.appendingPathComponent("cache").path]
        // Switchboard's C target (its atomics): SwiftPM passes its module map to every client; so do we
        // (the target's include folder, with its module map, beside this package's sources).
        let include = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/CSwitchboardAtomics/include")
        arguments += ["-I", include.path]
        process.arguments = arguments + [file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self))
    }

    struct CheckerError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
