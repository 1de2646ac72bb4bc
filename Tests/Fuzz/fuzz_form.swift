// Target: URLEncodedForm (Sources/Switchboard/Core/Encoding/) on JSON parsed from the input.
// Checks: encode() throws only for non-objects; its output uses only unreserved bytes, `%XX`, `[ ] = &`;
// each escaped key/value percent-decodes back to the original; appendingQuery() never traps, keeps the
// URL's scheme/host/fragment and yields a URL whose query ends with the (sanitized) addition.
// Also feeds the raw input text to appendingQuery() (exercises sanitizedQuery on arbitrary bytes).
import Foundation

let baseURLs = [
    URL(string: "https://api.example.com/items?sort=asc#top")!,
    URL(string: "https://api.example.com")!,
    URL(string: "http://h/p?")!,
    URL(string: "http://h/p?a=1&")!,
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = inputText(data, size)
    for url in baseURLs {
        let out = URLEncodedForm.appendingQuery(raw, to: url)
        expect(
            "host", out.host == url.host && out.scheme == url.scheme,
            "appendingQuery(\(raw.debugDescription), to: \(url)) changed scheme/host: \(out)")
    }

    guard let json = try? JSON.parse(Data(bytes: data, count: size)) else { return 0 }
    let encoded: String
    do {
        encoded = try URLEncodedForm.encode(json)
    } catch {
        if case .object = json { fatalError("[throw] encode threw \(error) for an object") }
        return 0
    }
    guard case .object = json else { fatalError("[throw] encode accepted a non-object: \(json)") }
    for byte in encoded.utf8 {
        let fine =
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
            || "-._~%[]=&".utf8.contains(byte)
        expect("charset", fine, "encode produced byte 0x\(String(byte, radix: 16)) in \(encoded.debugDescription)")
    }
    // Every top-level string member must decode back (names and values are escaped the same way).
    if case .object(let members) = json {
        for (key, value) in members {
            let escapedKey = URLEncodedForm.escape(key)
            expect("escape", percentDecoded(escapedKey) == Array(key.utf8), "escape(\(key.debugDescription)) = \(escapedKey) does not decode back")
            if case .string(let s) = value {
                let escaped = URLEncodedForm.escape(s)
                expect("escape", percentDecoded(escaped) == Array(s.utf8), "escape(\(s.debugDescription)) = \(escaped) does not decode back")
                expect("pair", encoded.contains(escapedKey + "=" + escaped), "pair for \(key.debugDescription) missing from \(encoded)")
            }
        }
    }
    for url in baseURLs {
        let out = URLEncodedForm.appendingQuery(encoded, to: url)
        expect(
            "host", out.host == url.host && out.scheme == url.scheme && out.fragment == url.fragment,
            "appendingQuery(\(encoded.debugDescription), to: \(url)) gave \(out)")
        if !encoded.isEmpty {
            let query = out.query(percentEncoded: true) ?? ""
            let expected = encoded.replacingOccurrences(of: "[", with: "%5B").replacingOccurrences(of: "]", with: "%5D")
            expect("append", query.hasSuffix(expected), "appendingQuery(\(encoded.debugDescription), to: \(url)) gave query \(query.debugDescription)")
        }
    }
    return 0
}

/// `%XX` escapes decoded to bytes (nil for a malformed escape). Foundation's removingPercentEncoding is
/// not used: it drops a leading U+FEFF.
func percentDecoded(_ text: String) -> [UInt8]? {
    let bytes = Array(text.utf8)
    func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
    }
    var out: [UInt8] = []
    var i = 0
    while i < bytes.count {
        if bytes[i] == UInt8(ascii: "%") {
            guard i + 2 < bytes.count, let high = hex(bytes[i + 1]), let low = hex(bytes[i + 2]) else { return nil }
            out.append(high << 4 | low)
            i += 3
        } else {
            out.append(bytes[i])
            i += 1
        }
    }
    return out
}
