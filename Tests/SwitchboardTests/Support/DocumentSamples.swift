import Foundation

/// The Swift samples of one Markdown document (the README or an article of the DocC catalog), read
/// from the file itself so that a sample that stops compiling fails the suite.
///
/// The rules (CONTRIBUTING.md gives them to writers):
/// - every ```swift block is compiled; the blocks of one document are joined in order into one main
///   file, after `import Foundation`, `FoundationNetworking` (where it exists), `Switchboard` and
///   `SwitchboardTesting`;
/// - a block right after a line `<!-- sample: not compiled -->` is left out (the text says why);
/// - a document with the line `<!-- samples: runnable -->` is also built into an executable and run,
///   with `https://api.example.com` replaced by a loopback server's URL; it must exit with status 0.
struct DocumentSamples: Sendable {
    struct Block: Sendable {
        let line: Int
        let code: String
    }

    let name: String
    let blocks: [Block]
    let isRunnable: Bool

    static let notCompiledMarker = "<!-- sample: not compiled -->"
    static let runnableMarker = "<!-- samples: runnable -->"
    static let exampleBaseURL = "https://api.example.com"

    /// The package's root folder.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The README and every article of the catalog, by path from the root.
    static var documentPaths: [String] {
        let catalog = "Sources/Switchboard/Switchboard.docc"
        let articles = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path)) ?? []
        return ["README.md"] + articles.filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
    }

    init(path: String) throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        self.init(name: path, markdown: text)
    }

    init(name: String, markdown: String) {
        self.name = name
        var blocks: [Block] = []
        var current: (line: Int, indent: Int, lines: [String], skipped: Bool)?
        var previous = ""
        var runnable = false
        for (index, line) in markdown.components(separatedBy: "\n").enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var block = current {
                if trimmed == "```" {
                    if !block.skipped { blocks.append(Block(line: block.line, code: block.lines.joined(separator: "\n"))) }
                    current = nil
                } else {
                    // Lines of a fence inside a list item carry the item's indentation.
                    block.lines.append(String(line.dropFirst(min(block.indent, line.prefix { $0 == " " }.count))))
                    current = block
                }
            } else if trimmed.hasPrefix("```swift") {
                let indent = line.prefix { $0 == " " }.count
                current = (index + 1, indent, [], previous == Self.notCompiledMarker)
            } else if trimmed == Self.runnableMarker {
                runnable = true
            }
            if !trimmed.isEmpty { previous = trimmed }
        }
        self.blocks = blocks
        isRunnable = runnable
    }

    /// The document's samples as one main file; each block is preceded by a `#sourceLocation` naming
    /// the document and line, so a compiler error points into the Markdown.
    func source(baseURL: String? = nil) -> String {
        var source = """
            import Foundation
            #if canImport(FoundationNetworking)
            import FoundationNetworking
            #endif
            import Switchboard
            import SwitchboardTesting

            """
        for block in blocks {
            var code = block.code
            if let baseURL { code = code.replacingOccurrences(of: Self.exampleBaseURL, with: baseURL) }
            source += "#sourceLocation(file: \"\(name)\", line: \(block.line + 1))\n\(code)\n#sourceLocation()\n"
        }
        return source
    }
}
