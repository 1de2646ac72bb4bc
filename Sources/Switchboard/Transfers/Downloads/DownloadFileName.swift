import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The name a folder destination gives a downloaded file, from what the network said: the
/// `Content-Disposition` (`filename*=UTF-8''…` before `filename=`), else the last path component of the
/// URL that answered, else ``fallback``. Every candidate goes through ``safe(_:)``.
package enum DownloadFileName {
    /// The name when no candidate is safe.
    package static let fallback = "download"

    /// The safe name for `response`'s body.
    package static func name(for response: HTTPURLResponse) -> String {
        var candidates: [String] = []
        if let disposition = response.value(forHTTPHeaderField: "Content-Disposition") {
            candidates += fileNames(inContentDisposition: disposition)
        }
        if let url = response.url { candidates.append(url.lastPathComponent) }
        return candidates.lazy.compactMap(safe).first ?? fallback
    }

    /// `name` when it can be used as a file name inside a folder, else `nil`. Checked on its bytes and
    /// Unicode scalars, never on characters (a leading dot followed by a combining mark is one
    /// character that doesn't start with `"."`, but the file is hidden all the same). Refused:
    /// - empty; starting with the byte `.` (so `.`, `..`, a hidden file like `.ssh`, and `.\u{301}x`);
    /// - longer than 255 bytes of UTF-8 (the longest name most file systems take);
    /// - holding `/` or `\`; NUL, a C0 or C1 control character or DEL; a Unicode format character
    ///   (general category Cf: the bidirectional controls, which could show `gpj.exe` as `exe.jpg`, and
    ///   the invisible ones such as U+00AD, U+200B–U+200D, U+2060 and U+FEFF); or a line or paragraph
    ///   separator (U+2028, U+2029).
    package static func safe(_ name: String) -> String? {
        guard let first = name.utf8.first, first != UInt8(ascii: "."), name.utf8.count <= 255 else { return nil }
        for scalar in name.unicodeScalars {
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F: return nil  // C0, DEL, C1 (NUL among them)
            case 0x2F, 0x5C: return nil  // `/`, `\`
            case 0x2028, 0x2029: return nil  // line and paragraph separators
            default: if scalar.properties.generalCategory == .format { return nil }  // bidirectional controls, invisible characters
            }
        }
        return name
    }

    /// The file names a `Content-Disposition` value names, best first (RFC 6266: `filename*` in UTF-8,
    /// then `filename`). Unchecked.
    package static func fileNames(inContentDisposition value: String) -> [String] {
        var extended: String?, plain: String?
        for parameter in parameters(value) {
            switch parameter.name {
            case "filename*":
                // `UTF-8'language'percent-encoded`; other charsets are not read.
                let parts = parameter.value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if parts.count == 3, parts[0].lowercased() == "utf-8" { extended = String(parts[2]).removingPercentEncoding }
            case "filename": plain = parameter.value
            default: continue
            }
        }
        return [extended, plain].compactMap { $0 }
    }

    /// The `name=value` parameters after the disposition type, names lower-cased, quoted strings unquoted.
    private static func parameters(_ value: String) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var rest = Substring(value)
        guard let first = rest.firstIndex(of: ";") else { return [] }
        rest = rest[rest.index(after: first)...]
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == ";" }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            var parsed = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        parsed.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        parsed.append(character)
                    }
                }
                rest = rest.drop { $0 != ";" }
            } else {
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                parsed = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            result.append((name, parsed))
        }
        return result
    }
}
