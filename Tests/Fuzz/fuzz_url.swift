// Target: URLResolver (Sources/Switchboard/Pipeline/URLResolver.swift): resolve(path:base:),
// scheme(of:), escapingLonePercents.
// Input: "<base>\n<path>"; without a newline the whole input is the path and the base is
// https://api.example.com/v2. A base that URL(string:) rejects is passed as nil.
// Checks: no trap; resolve either throws .invalidRequest or returns an http(s) URL with a host;
// scheme(of:) returns a prefix of the text that is followed by ':'; escapingLonePercents leaves no lone
// '%', changes nothing else, and is idempotent.
import Foundation

let defaultBase = URL(string: "https://api.example.com/v2")!

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let (head, tail) = splitOnce(data, size, at: 0x0A)
    let base: URL? = tail == nil ? defaultBase : URL(string: head)
    let path = tail ?? head

    for candidate in [path, head] {
        if let scheme = URLResolver.scheme(of: candidate) {
            expect(
                "scheme", candidate.hasPrefix(scheme + ":") && !scheme.isEmpty,
                "scheme(of: \(candidate.debugDescription)) = \(scheme.debugDescription)")
        }
        let escaped = URLResolver.escapingLonePercents(candidate)
        expect(
            "percent", URLResolver.escapingLonePercents(escaped) == escaped,
            "escapingLonePercents not idempotent on \(candidate.debugDescription)")
        expect("percent", validPercentEncoding(escaped), "escapingLonePercents(\(candidate.debugDescription)) = \(escaped.debugDescription) has a lone %")
        expect(
            "percent", candidate.utf8.contains(UInt8(ascii: "%")) || escaped == candidate,
            "escapingLonePercents changed text without '%': \(candidate.debugDescription) -> \(escaped.debugDescription)")
        expect(
            "percent", unescapingPercent25(escaped) == unescapingPercent25(candidate),
            "escapingLonePercents changed more than lone %: \(candidate.debugDescription) -> \(escaped.debugDescription)")
    }

    do {
        let url = try URLResolver.resolve(path: path, base: base)
        let scheme = url.scheme?.lowercased()
        expect(
            "resolved", (scheme == "http" || scheme == "https") && !(url.host ?? "").isEmpty,
            "resolve(path: \(path.debugDescription), base: \(String(describing: base))) = \(url)")
        _ = url.absoluteString
    } catch {
        guard case .invalidRequest(let reason) = error else {
            fatalError("[error] resolve threw \(error)")
        }
        _ = reason
    }
    return 0
}

/// The UTF-8 bytes with every "%25" turned into "%" (byte-wise: Foundation's replacingOccurrences
/// matches grapheme clusters and would miss "%25" followed by a combining mark).
func unescapingPercent25(_ text: String) -> [UInt8] {
    let bytes = Array(text.utf8)
    var out: [UInt8] = []
    var i = 0
    while i < bytes.count {
        if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, bytes[i + 1] == UInt8(ascii: "2"), bytes[i + 2] == UInt8(ascii: "5") {
            out.append(UInt8(ascii: "%"))
            i += 3
        } else {
            out.append(bytes[i])
            i += 1
        }
    }
    return out
}

/// Every '%' starts a `%XX` escape.
func validPercentEncoding(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    func hex(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x66) }
    for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: "%") {
        guard i + 2 < bytes.count, hex(bytes[i + 1]), hex(bytes[i + 2]) else { return false }
    }
    return true
}
