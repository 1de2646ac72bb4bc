// Target: Redaction (Sources/Switchboard/Features/Logging/Redaction.swift): redact(urlText:),
// redactForm, preview (JSON, form and plain bodies) and describe(.invalidRequest(reason:)).
// Input: the whole input is the URL text / form / body / quoted part of the reason.
// Checks: no trap; "leak-userinfo"/"leak-query": an independent oracle re-reads the redacted URL text on Unicode scalars
// (as URL parsers and servers do, not on grapheme clusters) and fails when a user-info part (after any
// "://" in the text, also a URL's inside a query value or fragment) or a
// query/fragment item whose name is secret (Redaction.isSecret) still shows a non-empty value other than
// "<redacted>"; describe() of a reason quoting the text equals the quoted redact(urlText:).
import Foundation

let redaction = Redaction.standard
let contentTypes: [String?] = [nil, "application/x-www-form-urlencoded", "text/plain", "application/json"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = inputText(data, size)

    let redacted = redaction.redact(urlText: text)
    if let (kind, leak) = secretLeak(in: redacted), !ignoredChecks.contains(kind) {
        fatalError("[\(kind)] redact(urlText: \(text.debugDescription)) = \(redacted.debugDescription) still shows \(leak.debugDescription)")
    }
    _ = redaction.redactForm(text)

    let body = Data(bytes: data, count: size)
    for type in contentTypes {
        _ = redaction.preview(body, contentType: type)
        _ = redaction.preview(body, contentType: type, limit: 200)
    }

    let described = redaction.describe(.invalidRequest(reason: "path \"" + text + "\" is not valid"))
    // describe() splits on the quote scalar, so the check holds whenever the text has none of its own
    // (a quote merged with a combining mark is still a quote scalar).
    if !text.unicodeScalars.contains("\"") {
        expect(
            "describe", described == "invalid request: path \"" + redacted + "\" is not valid",
            "describe differs from redact(urlText:): \(described.debugDescription)")
    }
    _ = redaction.describe(.invalidRequest(reason: text))
    return 0
}

/// The first secret still visible in `url` when read scalar by scalar, or nil: ("leak-userinfo", the
/// user info) or ("leak-query", the item).
func secretLeak(in url: String) -> (String, String)? {
    let scalars = Array(url.unicodeScalars)
    func string(_ slice: ArraySlice<Unicode.Scalar>) -> String {
        var s = String.UnicodeScalarView()
        s.append(contentsOf: slice)
        return String(s)
    }
    func firstIndex(of c: Unicode.Scalar, in range: Range<Int>) -> Int? {
        range.first { scalars[$0] == c }
    }
    // User info: between each "://" (the URL's own, or a URL's inside it) and the last '@' of the
    // authority after it.
    for sep in 0..<max(0, scalars.count - 2) where scalars[sep] == ":" && scalars[sep + 1] == "/" && scalars[sep + 2] == "/" {
        let start = sep + 3
        let end = (start..<scalars.count).first { "/?#".unicodeScalars.contains(scalars[$0]) } ?? scalars.count
        if let at = (start..<end).last(where: { scalars[$0] == "@" }) {
            let info = string(scalars[start..<at])
            if info != Redaction.placeholder { return ("leak-userinfo", info) }
        }
    }
    // Query and fragment items.
    let hash = firstIndex(of: "#", in: 0..<scalars.count)
    let beforeFragment = 0..<(hash ?? scalars.count)
    var parts: [Range<Int>] = []
    if let mark = firstIndex(of: "?", in: beforeFragment) { parts.append((mark + 1)..<beforeFragment.upperBound) }
    if let hash { parts.append((hash + 1)..<scalars.count) }
    for part in parts {
        for item in string(scalars[part]).unicodeScalars.split(separator: "&", omittingEmptySubsequences: false) {
            let pieces = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = string(ArraySlice(pieces[0]))
            let value = pieces.count > 1 ? string(ArraySlice(pieces[1])) : ""
            let decoded = name.removingPercentEncoding ?? name
            if redaction.isSecret(decoded) && !value.isEmpty && value != Redaction.placeholder {
                return ("leak-query", string(ArraySlice(item)))
            }
        }
    }
    return nil
}
