// Target: Redaction (Sources/Switchboard/Observing/Logging/Redaction.swift): redact(urlText:),
// redactForm, preview (JSON, form and plain bodies) and describe(.invalidRequest(reason:)).
// Input: the whole input is the URL text / form / body / quoted part of the reason.
// Checks: no trap; "leak-userinfo"/"leak-query": an independent oracle re-reads the redacted URL text on Unicode scalars
// (as URL parsers and servers do, not on grapheme clusters) and fails when a user-info part (after any
// "://" before the query; in a query or fragment item's value, as it is or percent-decoded) or a
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
    // Item by item against the input: the query and fragment keep their items; each item with a secret
    // name or a value that holds a URL with user info reads `name=<redacted>`, every other is unchanged
    // (a secret must not survive under another item's name).
    let before = items(of: text), after = items(of: redacted)
    expect("items", before.count == after.count, "redact(urlText: \(text.debugDescription)) = \(redacted.debugDescription) changed the items")
    for (given, shown) in zip(before, after) {
        let pieces = given.unicodeScalars.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        var nameScalars = String.UnicodeScalarView()
        nameScalars.append(contentsOf: pieces[0])
        let name = String(nameScalars)
        var valueScalars = String.UnicodeScalarView()
        if pieces.count > 1 { valueScalars.append(contentsOf: pieces[1]) }
        let value = String(valueScalars)
        // Decoded escape by escape, as servers do: `removingPercentEncoding` gives up on the whole name at
        // one broken escape (`ot%50%]25` would keep `ot%50` and miss `otP`).
        let decodedName = name.unicodeScalars.contains("%") ? Redaction.leniently(decoding: name) : name
        let secret =
            redaction.isSecret(name) || redaction.isSecret(decodedName) || userInfo(in: Array(value.unicodeScalars), counting: true) != nil
            || userInfo(in: Array((value.removingPercentEncoding ?? value).unicodeScalars), counting: true) != nil
            || looksLikeJWT(value) || looksLikeJWT(value.removingPercentEncoding ?? value)
        let expected = secret ? name + "=" + Redaction.placeholder : given
        // A value that may nest a secret (a token or a URL within it, JSON, a percent-encoded form)
        // may be shown as the placeholder, whole, too.
        let nested = !secret && mayNest(value) && shown == name + "=" + Redaction.placeholder
        expect("leak-item", shown == expected || nested, "redact(urlText: \(text.debugDescription)): item \(given.debugDescription) shown as \(shown.debugDescription)")
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

/// Whether a value could hold a secret inside it: `eyJ`, `://` or `@`, `{` or `[`, or a form inside
/// (a `=` once percent-decoded, or after a `?` as in `next=/cb?token=…`). Read on scalars: a combining
/// mark after `{` or `?` leaves the scalar there (found by fuzzing).
func mayNest(_ value: String) -> Bool {
    let decoded = Redaction.leniently(decoding: value)
    for text in [value, decoded] {
        let scalars = Array(text.unicodeScalars)
        let has = { (needle: String) -> Bool in
            let pattern = Array(needle.unicodeScalars)
            guard scalars.count >= pattern.count else { return false }
            return (0...(scalars.count - pattern.count)).contains { Array(scalars[$0..<($0 + pattern.count)]) == pattern }
        }
        if has("eyJ") || has("://") || has("@") || has("{") || has("[") { return true }
    }
    let decodedScalars = decoded.unicodeScalars
    return (decoded != value || decodedScalars.contains("?")) && decodedScalars.contains("=")
}

/// Whether `value` is a JSON Web Token, read independently of Redaction: `eyJ`, then 3 or 5
/// dot-separated segments of base64url, all but the last non-empty.
func looksLikeJWT(_ value: String) -> Bool {
    guard value.hasPrefix("eyJ") else { return false }
    let segments = value.split(separator: ".", omittingEmptySubsequences: false)
    let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".unicodeScalars)
    guard segments.count == 3 || segments.count == 5 else { return false }
    return segments.enumerated().allSatisfy { index, segment in
        (!segment.isEmpty || index == segments.count - 1) && segment.unicodeScalars.allSatisfy(alphabet.contains)
    }
}

/// The first secret still visible in `url` when read scalar by scalar, or nil: ("leak-userinfo", the
/// user info) or ("leak-query", the item).
func secretLeak(in url: String) -> (String, String)? {
    let scalars = Array(url.unicodeScalars)
    // User info before the query or fragment: between each "://" (the URL's own, or a URL's in the
    // path) and the last '@' of the authority after it.
    let queryStart = (0..<scalars.count).first { scalars[$0] == "?" || scalars[$0] == "#" } ?? scalars.count
    if let info = userInfo(in: Array(scalars[..<queryStart])), info != Redaction.placeholder { return ("leak-userinfo", info) }
    // Query and fragment items.
    for item in items(of: url) {
        let pieces = item.unicodeScalars.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(pieces[0])
        let value = pieces.count > 1 ? String(pieces[1]) : ""
        let decoded = name.removingPercentEncoding ?? name
        if redaction.isSecret(decoded) && !value.isEmpty && value != Redaction.placeholder {
            return ("leak-query", item)
        }
        // A value that holds a URL with user info (a redirect target), as it is or percent-decoded.
        for form in [value, value.removingPercentEncoding ?? value] where value != Redaction.placeholder {
            if let info = userInfo(in: Array(form.unicodeScalars)) { return ("leak-userinfo", info) }
        }
    }
    return nil
}

/// The first user info in `scalars`: after a "://", up to the last '@' before the authority ends (at
/// '/', '?', '#' or the end). One that is already `<redacted>` counts only when `counting`.
func userInfo(in scalars: [Unicode.Scalar], counting: Bool = false) -> String? {
    for sep in 0..<max(0, scalars.count - 2) where scalars[sep] == ":" && scalars[sep + 1] == "/" && scalars[sep + 2] == "/" {
        let start = sep + 3
        let end = (start..<scalars.count).first { "/?#".unicodeScalars.contains(scalars[$0]) } ?? scalars.count
        if let at = (start..<end).last(where: { scalars[$0] == "@" }) {
            var info = String.UnicodeScalarView()
            info.append(contentsOf: scalars[start..<at])
            let text = String(info)
            if counting || text != Redaction.placeholder { return text }
        }
    }
    return nil
}

/// The query's and the fragment's items, read on scalars: the query from the first '?' before the first
/// '#', the fragment after it; each split at '&'.
func items(of url: String) -> [String] {
    let scalars = Array(url.unicodeScalars)
    let hash = scalars.firstIndex(of: "#")
    var parts: [ArraySlice<Unicode.Scalar>] = []
    if let mark = scalars[..<(hash ?? scalars.count)].firstIndex(of: "?") { parts.append(scalars[(mark + 1)..<(hash ?? scalars.count)]) }
    if let hash { parts.append(scalars[(hash + 1)...]) }
    return parts.flatMap { part in
        part.split(separator: "&", omittingEmptySubsequences: false).map { item in
            var view = String.UnicodeScalarView()
            view.append(contentsOf: item)
            return String(view)
        }
    }
}
