// Target: HTTPHeaders init/merge/subscript/firstInvalidField and HTTPMethod.isToken
// (Sources/Switchboard/Core/HTTPHeaders.swift, HTTPMethod.swift).
// Input: lines "name:value" (a line without ':' is a name with an empty value); lines before the first
// empty line form headers A, lines after it headers B. Values may hold CR and NUL (only LF splits).
// Checks: no trap; A has no two names equal ASCII-case-insensitively; every name given to the init can
// be looked up again ("lookup"); for ASCII names init and merge (both the <=8 subscript path and the
// >8 rebuild path) match a simple reference model; firstInvalidField and isToken match the RFC 9110 rules.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let lines = inputText(data, size).split(separator: "\n", omittingEmptySubsequences: false)
    var groups: [[HTTPHeaders.Field]] = [[], []]
    var group = 0
    for line in lines {
        if line.isEmpty { group = 1; continue }
        let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        groups[group].append(.init(name: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : ""))
    }
    let (a, b) = (groups[0], groups[1])
    let ascii = (a + b).allSatisfy { $0.name.utf8.allSatisfy { $0 < 0x80 } }

    let headersA = HTTPHeaders(a), headersB = HTTPHeaders(b)
    let fieldsA = Array(headersA)
    for i in fieldsA.indices {
        for j in fieldsA.indices where j > i {
            expect(
                "dedupe", !fieldsA[i].name.caseInsensitiveEquals(fieldsA[j].name),
                "HTTPHeaders kept both \(fieldsA[i].name.debugDescription) and \(fieldsA[j].name.debugDescription)")
        }
    }
    for field in a {
        expect(
            "lookup", headersA[field.name] != nil,
            "HTTPHeaders(\(a.map { $0.name }.debugDescription))[\(field.name.debugDescription)] is nil; stored names: \(fieldsA.map(\.name).debugDescription)")
    }
    if ascii {
        expect("model", fieldsA == model(a), "init: \(fieldsA) != model \(model(a))")
    }

    var merged = headersA
    merged.merge(headersB)
    let viaMerging = headersA.merging(headersB)
    expect("merge", Array(merged) == Array(viaMerging), "merge and merging differ")
    if ascii {
        let expected = model(model(a) + model(b))
        expect("model", Array(merged) == expected, "merge (\(b.count) fields): \(Array(merged)) != model \(expected)")
        for field in model(b) {
            expect("merge", merged[field.name] == field.value, "after merge [\(field.name.debugDescription)] = \(String(describing: merged[field.name]))")
        }
    }

    // firstInvalidField against the rule as written in its documentation.
    let firstBad = Array(merged).first { field in
        field.name.isEmpty || !field.name.utf8.allSatisfy(isToken) || field.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
    let reported = merged.firstInvalidField
    expect("invalid", reported?.field == firstBad, "firstInvalidField = \(String(describing: reported)), expected \(String(describing: firstBad))")
    _ = merged.description
    _ = merged.dictionary

    for field in a + b {
        for raw in [field.name, field.value] {
            let method = HTTPMethod(rawValue: raw)
            let expected = !method.rawValue.isEmpty && method.rawValue.utf8.allSatisfy(isToken)
            expect("method", method.isToken == expected, "HTTPMethod(\(raw.debugDescription)).isToken = \(method.isToken)")
            _ = method.isIdempotent
            _ = method.encodesParametersInQuery
        }
    }
    return 0
}

/// RFC 9110 tchar.
func isToken(_ byte: UInt8) -> Bool {
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        || "!#$%&'*+-.^_`|~".utf8.contains(byte)
}

/// Reference: later fields replace the value of an earlier one with the same name (ASCII
/// case-insensitive), which keeps its position and spelling.
func model(_ fields: [HTTPHeaders.Field]) -> [HTTPHeaders.Field] {
    var out: [HTTPHeaders.Field] = []
    for field in fields {
        if let index = out.firstIndex(where: { $0.name.lowercased() == field.name.lowercased() }) {
            out[index].value = field.value
        } else {
            out.append(field)
        }
    }
    return out
}
