import Foundation
import LoopbackServer
import Testing

// The Swift samples of the README and of every DocC article, read from the documents themselves:
// each document's samples must compile (in Swift 6 mode, without warnings), and the runnable ones must
// run against the loopback server. See DocumentSamples for the rules.

/// Whether a sample compiles doesn't depend on a sanitizer: the plain run of the suite checks them, and
/// the sanitizer runs (several minutes of compiling, one document at a time) leave them out.
private let compilesSamples = !runsUnderThreadSanitizer && !runsUnderAddressSanitizer

@Suite(hangGuard, admission) struct DocumentationSamplesTests {
    @Test(.enabled(if: compilesSamples), arguments: DocumentSamples.documentPaths)
    func samplesCompile(_ path: String) async throws {
        let document = try DocumentSamples(path: path)
        // Every listed document has Swift samples: one without any would check nothing here.
        try #require(!document.blocks.isEmpty, "\(path) has no Swift samples to compile")
        let outcome = try await TypeChecker.check(document.source())
        #expect(outcome.status == 0, "\(path): its samples don't compile:\n\(outcome.errors.joined(separator: "\n"))")
        #expect(outcome.warnings.isEmpty, "\(path): its samples compile with warnings:\n\(outcome.warnings.joined(separator: "\n"))")
    }

    #if os(Linux)
    // A document that can't be read is left out here and fails `samplesCompile` above, which reads
    // every listed document with `try`.
    @Test(.enabled(if: compilesSamples), arguments: DocumentSamples.documentPaths.filter { (try? DocumentSamples(path: $0))?.isRunnable == true })
    func runnableSamplesRun(_ path: String) async throws {
        let document = try DocumentSamples(path: path)
        try await withServer { server in
            let outcome = try await TypeChecker.run(document.source(baseURL: server.baseURL.absoluteString), timeout: 60)
            #expect(outcome.status == 0, "\(path): its samples failed (status \(outcome.status)):\n\(outcome.output.suffix(3000))")
        }
    }
    #endif

    @Test func theReadmeAndTheGettingStartedArticleHaveRunnableSamples() throws {
        let runnable = try DocumentSamples.documentPaths.filter { try DocumentSamples(path: $0).isRunnable }
        #expect(runnable.contains("README.md"))
        #expect(runnable.contains { $0.hasSuffix("GettingStarted.md") })
    }

    // The reader itself.

    @Test func blocksAreJoinedInOrderAndMarkedBlocksLeftOut() {
        let markdown = """
            # Title
            ```swift
            let a = 1
            ```
            Text.
            <!-- sample: not compiled -->
            ```swift
            this does not compile
            ```
            - A list item:
              ```swift
              let b = a + 1
              ```
            ```objc
            [self ignored];
            ```
            """
        let samples = DocumentSamples(name: "test.md", markdown: markdown)
        #expect(samples.blocks.map(\.code) == ["let a = 1", "let b = a + 1"])
        #expect(samples.blocks.map(\.line) == [2, 11])
        #expect(!samples.isRunnable)
        let source = samples.source()
        #expect(source.contains("#sourceLocation(file: \"test.md\", line: 3)\nlet a = 1\n"))
        #expect(!source.contains("does not compile"))
    }

    @Test func aRunnableDocumentHasItsExampleURLReplaced() {
        let markdown = """
            <!-- samples: runnable -->
            ```swift
            let url = URL(string: "https://api.example.com/users/1")
            ```
            """
        let samples = DocumentSamples(name: "run.md", markdown: markdown)
        #expect(samples.isRunnable)
        #expect(samples.source(baseURL: "http://127.0.0.1:9").contains("URL(string: \"http://127.0.0.1:9/users/1\")"))
    }

    @Test(.enabled(if: compilesSamples)) func aSampleThatDoesNotCompileIsReportedAtItsLineInTheDocument() async throws {
        let samples = DocumentSamples(name: "broken.md", markdown: "Text\n\n```swift\nlet x: Int = \"no\"\n```\n")
        let outcome = try await TypeChecker.check(samples.source())
        #expect(outcome.status != 0)
        #expect(outcome.errors.contains { $0.contains("broken.md:4") })
    }
}
