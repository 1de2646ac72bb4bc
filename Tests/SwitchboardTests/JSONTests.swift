import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

/// Parses UTF-8 text, for brevity.
private func parse(_ text: String) throws(JSONParseError) -> JSON {
    try JSON.parse(Data(text.utf8))
}

/// Parses raw bytes, returning the error (or nil when parsing succeeded).
private func parseError(_ bytes: [UInt8]) -> JSONParseError? {
    do {
        _ = try JSON.parse(Data(bytes))
        return nil
    } catch {
        return error
    }
}

/// Parses text, returning the error (or nil when parsing succeeded).
private func parseError(_ text: String) -> JSONParseError? {
    parseError(Array(text.utf8))
}

@Suite("JSON value")
struct JSONValueTests {
    @Test func literalSyntax() {
        let payload: JSON = ["type": "List", "start": 0, "ratio": 0.5, "ok": true, "tags": ["a"], "x": nil]
        #expect(
            payload
                == .object([
                    "type": .string("List"), "start": .integer(0), "ratio": .double(0.5), "ok": .bool(true),
                    "tags": .array([.string("a")]), "x": .null,
                ]))
        let duplicate: JSON = ["k": 1, "k": 2]
        #expect(duplicate["k"] == 2)
    }

    @Test func subscriptsNeverTrap() {
        let json: JSON = ["user": ["id": 7, "roles": ["admin"]], "list": [1, 2]]
        #expect(json["user"]["id"] == 7)
        #expect(json["user"]["roles"][0] == "admin")
        #expect(json["missing"]["deeper"] == .null)
        #expect(json["list"][2] == .null)
        #expect(json["list"][-1] == .null)
        #expect(json["list"]["key"] == .null)
        #expect(json["user"][0] == .null)
        #expect(JSON.string("s")["a"] == .null)
        #expect(JSON.integer(1)[0] == .null)
        #expect(JSON.null["a"][3]["b"].isNull)
    }

    @Test func typedAccessors() {
        #expect(JSON.integer(42).int == 42)
        #expect(JSON.integer(42).int64 == 42)
        #expect(JSON.integer(42).double == 42.0)
        #expect(JSON.double(3.0).int == 3)
        #expect(JSON.double(3.5).int == nil)
        #expect(JSON.double(1e300).int == nil)
        #expect(JSON.double(.nan).int == nil)
        #expect(JSON.double(2.5).double == 2.5)
        #expect(JSON.string("1").int == nil)
        #expect(JSON.bool(true).bool == true)
        #expect(JSON.integer(1).bool == nil)
        #expect(JSON.string("s").string == "s")
        #expect(JSON.integer(1).string == nil)
        #expect(JSON.array([1]).array == [1])
        #expect(JSON.object(["a": 1]).object == ["a": 1])
        #expect(JSON.array([]).object == nil)
        #expect(JSON.null.isNull)
        #expect(!JSON.bool(false).isNull)
    }

    @Test func descriptionIsCompactSortedJSON() {
        let json: JSON = ["b": [1, 2.5, nil], "a": "x\"y", "c": false]
        #expect(json.description == #"{"a":"x\"y","b":[1,2.5,null],"c":false}"#)
    }
}

@Suite("JSON serializer")
struct JSONSerializerTests {
    @Test func escapesStrings() throws {
        let json: JSON = .string("q\" b\\ / \n\r\t\u{08}\u{0C}\u{01}\u{1F}\u{7F} é 😀")
        let text = String(decoding: json.serialized(), as: UTF8.self)
        #expect(text == "\"q\\\" b\\\\ / \\n\\r\\t\\b\\f\\u0001\\u001f\u{7F} é 😀\"")
        #expect(try parse(text) == json)
    }

    @Test func numbers() {
        let json: JSON = [
            .integer(.max), .integer(.min), 0, -0.0, 1.0, 0.1, 1e-5, 1e100, .double(.leastNonzeroMagnitude),
            .double(1.7976931348623157e308), .double(.infinity), .double(.nan),
        ]
        let text = String(decoding: json.serialized(), as: UTF8.self)
        #expect(
            text == "[9223372036854775807,-9223372036854775808,0,-0.0,1.0,0.1,1e-05,1e+100,5e-324,"
                + "1.7976931348623157e+308,null,null]")
    }

    @Test func sortedAndPretty() {
        let json: JSON = ["b": [1, ["c": nil]], "a": [:], "e": []]
        let text = String(decoding: json.serialized(sortedKeys: true, prettyPrinted: true), as: UTF8.self)
        #expect(
            text == """
                {
                  "a": {},
                  "b": [
                    1,
                    {
                      "c": null
                    }
                  ],
                  "e": []
                }
                """)
        #expect(
            String(decoding: json.serialized(sortedKeys: true), as: UTF8.self)
                == #"{"a":{},"b":[1,{"c":null}],"e":[]}"#)
    }

    @Test func roundTripVariedDocument() throws {
        let text = """
            \u{FEFF}{"id": 123, "neg": -45, "pi": 3.141592653589793, "small": 1.5e-300, "big": 12345678901234567890,
             "exp": 6.02E23, "name": "Zoë \\u00e9\\ud83d\\ude00 \\\"q\\\" \\/", "ok": true, "no": false, "none": null,
             "list": [1, "two", [3, [4, {}]], [], {"k": "v"}], "nested": {"a": {"b": {"c": [null]}}},
             "ctrl": "tab\\tnl\\n\\u0000", "empty": ""}
            """
        let first = try JSON.parse(Data(text.utf8))
        #expect(first["name"] == "Zoë é😀 \"q\" /")
        #expect(first["big"] == .double(12_345_678_901_234_567_168))
        #expect(first["exp"] == .double(6.02e23))
        #expect(first["ctrl"] == "tab\tnl\n\u{0}")
        for sorted in [false, true] {
            for pretty in [false, true] {
                let again = try JSON.parse(first.serialized(sortedKeys: sorted, prettyPrinted: pretty))
                #expect(again == first)
            }
        }
    }
}

@Suite("JSON parser")
struct JSONParserTests {
    @Test func scalarsAtTopLevel() throws {
        #expect(try parse("null") == .null)
        #expect(try parse(" true ") == true)
        #expect(try parse("false") == false)
        #expect(try parse("\"s\"") == "s")
        #expect(try parse("-12") == .integer(-12))
        #expect(try parse("0") == .integer(0))
        #expect(try parse("-0") == .integer(0))
        #expect(try parse("-0.0") == .double(-0.0))
        #expect(try parse("\t\r\n[ 1 , { \"a\" : 2 } ]\n") == [1, ["a": 2]])
        #expect(try JSON.parse("[1.5]") == [1.5])
    }

    @Test func integerLimits() throws {
        #expect(try parse("9223372036854775807") == .integer(.max))
        #expect(try parse("-9223372036854775808") == .integer(.min))
        #expect(try parse("9223372036854775808") == .double(9223372036854775808))
        #expect(try parse("-9223372036854775809") == .double(-9.223372036854775808e18))
        #expect(try parse("18446744073709551616") == .double(18446744073709551616))
        #expect(try parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
        #expect(try parse("1.0") == .double(1))
        #expect(try parse("1e2") == .double(100))
        #expect(try parse("1E+2") == .double(100))
        #expect(try parse("-25e-1") == .double(-2.5))
    }

    @Test func doublesMatchStandardLibrary() throws {
        var generator = SystemRandomNumberGenerator()
        var samples = [
            "0.1", "0.2", "0.30000000000000004", "2.2250738585072014e-308", "4.9e-324", "1e-400",
            "1.7976931348623157e308", "9007199254740993", "9007199254740993.0", "0.000001234",
            "123.456e-7", "1e22", "1e23", "8.98846567431158e307", "2.47032822920623272e-324",
            "1.00000000000000011102230246251565404236316680908203125",
            "0.1000000000000000055511151231257827021181583404541015625",
        ]
        for _ in 0..<2000 {
            let mantissa = UInt64.random(in: 0...UInt64.max, using: &generator) >> UInt64.random(in: 0...63)
            let fraction = Int.random(in: 0...20)
            var digits = String(mantissa)
            if fraction > 0 {
                if digits.count <= fraction { digits = String(repeating: "0", count: fraction - digits.count + 1) + digits }
                digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -fraction))
            }
            samples.append(digits + (Bool.random() ? "e\(Int.random(in: -40...40))" : ""))
            samples.append(Double(bitPattern: UInt64.random(in: 0...0x7FEF_FFFF_FFFF_FFFF)).description)
        }
        for sample in samples {
            let expected = try #require(Double(sample), "\(sample)")
            guard case .double(let value) = try parse(sample) else {
                #expect(Int64(sample) != nil, "\(sample) parsed as integer")
                continue
            }
            #expect(value.bitPattern == expected.bitPattern, "\(sample)")
        }
    }

    @Test func duplicateKeysLastWins() throws {
        #expect(try parse(#"{"a":1,"b":2,"a":3}"#) == ["a": 3, "b": 2])
    }

    @Test func stringsAndEscapes() throws {
        #expect(try parse(#""\ud83d\ude00""#) == "😀")
        #expect(try parse(#""\u00E9\u00e9""#) == "éé")
        #expect(try parse(#""\b\f\n\r\t\"\\\/""#) == "\u{08}\u{0C}\n\r\t\"\\/")
        #expect(try parse("\"raw é 😀 then \\n escape é\"") == "raw é 😀 then \n escape é")
        #expect(try parse(#""\u0000""#) == "\u{0}")
        #expect(try parse("\"\u{7F}\"") == "\u{7F}")
        let long = String(repeating: "abcdefgh", count: 1000)
        #expect(try parse("\"\(long)\"") == .string(long))
    }

    @Test func byteOrderMarkAccepted() throws {
        #expect(try JSON.parse(Data([0xEF, 0xBB, 0xBF] + Array("[1]".utf8))) == [1])
        #expect(parseError([0xEF, 0xBB, 0xBF])?.reason == .unexpectedEndOfInput)
    }

    @Test func truncatedInput() {
        for text in [
            "", "   ", "[", "[1", "[1,", "{", "{\"a\"", "{\"a\":", "{\"a\":1", "\"abc", "\"\\", "\"\\u12",
            "tru", "nul", "-", "1.", "1e", "1e+", "\"\\ud83d", "\"\\ud83d\\",
        ] {
            #expect(parseError(text)?.reason == .unexpectedEndOfInput, "\(text)")
        }
        #expect(parseError("[1,2")?.description == "unexpected end of input at byte 4")
    }

    @Test func structuralErrors() {
        #expect(parseError("[1,]") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "]")), at: 3))
        #expect(parseError(#"{"a":1,}"#) == JSONParseError(.unexpectedCharacter(UInt8(ascii: "}")), at: 7))
        #expect(parseError("[1 2]")?.reason == .unexpectedCharacter(UInt8(ascii: "2")))
        #expect(parseError("{1:2}")?.reason == .unexpectedCharacter(UInt8(ascii: "1")))
        #expect(parseError(#"{"a" 1}"#)?.reason == .unexpectedCharacter(UInt8(ascii: "1")))
        #expect(parseError("[1]]") == JSONParseError(.trailingCharacters, at: 3))
        #expect(parseError("1 2")?.reason == .trailingCharacters)
        #expect(parseError("truex")?.reason == .trailingCharacters)
        #expect(parseError("trUe")?.reason == .unexpectedCharacter(UInt8(ascii: "U")))
        #expect(parseError("[01]") == JSONParseError(.invalidNumber, at: 1))
        #expect(parseError("-01")?.reason == .invalidNumber)
        #expect(parseError("-a")?.reason == .invalidNumber)
        #expect(parseError("1.e5")?.reason == .invalidNumber)
        #expect(parseError("1e+x")?.reason == .invalidNumber)
        #expect(parseError(".5")?.reason == .unexpectedCharacter(UInt8(ascii: ".")))
        #expect(parseError("+1")?.reason == .unexpectedCharacter(UInt8(ascii: "+")))
        #expect(parseError("NaN")?.reason == .unexpectedCharacter(UInt8(ascii: "N")))
        #expect(parseError("[1]\u{0}")?.description == "unexpected data after the top-level value at byte 3")
        #expect(parseError("\u{1}")?.description == "unexpected byte 0x01 at byte 0")
    }

    @Test func numberOutOfRange() throws {
        #expect(parseError("1e400") == JSONParseError(.numberOutOfRange, at: 0))
        #expect(parseError("[-1.5e309]") == JSONParseError(.numberOutOfRange, at: 1))
        #expect(parseError("1" + String(repeating: "0", count: 400))?.reason == .numberOutOfRange)
        #expect(try parse("1e-400") == .double(0))
        #expect(try parse("0e99999999999") == .double(0))
    }

    @Test func stringErrors() {
        #expect(parseError(#""a\qb""#) == JSONParseError(.invalidEscape, at: 2))
        #expect(parseError(#""\x41""#)?.description == "invalid escape at byte 1")
        #expect(parseError(#""\u12G4""#) == JSONParseError(.invalidUnicodeEscape, at: 1))
        #expect(parseError(#""\ud83d""#) == JSONParseError(.unpairedSurrogate, at: 1))
        #expect(parseError(#""\ud83dx""#)?.reason == .unpairedSurrogate)
        #expect(parseError(#""\ud83d\n""#)?.reason == .unpairedSurrogate)
        #expect(parseError(#""\ud83d\u0041""#)?.reason == .unpairedSurrogate)
        #expect(parseError(#""\ude00""#)?.reason == .unpairedSurrogate)
        #expect(parseError("\"a\u{1}b\"") == JSONParseError(.controlCharacterInString, at: 2))
        #expect(parseError("\"a\nb\"")?.reason == .controlCharacterInString)
        #expect(parseError("\"\\n\tb\"") == JSONParseError(.controlCharacterInString, at: 3))
    }

    @Test func invalidUTF8() {
        let cases: [([UInt8], Int)] = [
            ([0x22, 0x61, 0xFF, 0x22], 2),  // invalid byte
            ([0x22, 0xC0, 0xAF, 0x22], 1),  // overlong "/"
            ([0x22, 0x61, 0x62, 0xED, 0xA0, 0x80, 0x22], 3),  // encoded surrogate
            ([0x22, 0xE2, 0x82, 0x22], 1),  // truncated sequence
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
            ([0x22, 0x80, 0x22], 1),  // lone continuation byte
            ([0x22, 0x5C, 0x6E, 0xFF, 0x22], 3),  // after an escape
        ]
        for (bytes, offset) in cases {
            #expect(parseError(bytes) == JSONParseError(.invalidUTF8, at: offset), "\(bytes)")
        }
        #expect(parseError([0x5B, 0xFF, 0x5D])?.reason == .unexpectedCharacter(0xFF))
    }

    /// Below iOS 18 / macOS 15 the parser validates with its own check instead of `String(validating:)`;
    /// on Linux the standard library's is always there, so the two are compared here, byte for byte.
    @Test func portableUTF8ValidationAgreesWithTheStandardLibrary() {
        var generator = SystemRandomNumberGenerator()
        var samples: [[UInt8]] = [
            [], [0x61], [0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80],
            [0xF4, 0x8F, 0xBF, 0xBF], [0xEF, 0xBB, 0xBF], Array("héllo 世界 🎉".utf8),
        ]
        // Random sequences biased to the lead and continuation bytes where the rules are.
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0x9F, 0xA0, 0x8F, 0x90]
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...6, using: &generator)
            samples.append(
                (0..<length).map { _ in
                    Bool.random(using: &generator) ? interesting.randomElement(using: &generator)! : UInt8.random(in: 0...255, using: &generator)
                })
        }
        for bytes in samples {
            bytes.withUnsafeBufferPointer { buffer in
                #expect(UTF8Validation.portableString(buffer) == String(validating: buffer, as: UTF8.self), "\(bytes)")
            }
        }
    }

    @Test func depthLimit() throws {
        let bomb = String(repeating: "[", count: 100_000)
        #expect(parseError(bomb) == JSONParseError(.nestingTooDeep, at: JSON.maximumDepth))
        #expect(parseError(String(repeating: "{\"a\":", count: 100_000))?.reason == .nestingTooDeep)
        let deepest = String(repeating: "[", count: JSON.maximumDepth) + String(repeating: "]", count: JSON.maximumDepth)
        var value = try parse(deepest)
        var depth = 0
        while case .array(let inner) = value, let first = inner.first {
            value = first
            depth += 1
        }
        #expect(depth == JSON.maximumDepth - 1)
        let tooDeep = "[" + deepest + "]"
        #expect(parseError(tooDeep)?.reason == .nestingTooDeep)
        #expect(parseError(tooDeep)?.description == "nesting deeper than 512 levels at byte 512")
    }

    @Test func parsesConcurrently() async throws {
        let data = JSON.array((0..<200).map { ["id": .integer(Int64($0)), "name": .string("n\($0)")] }).serialized()
        let counts = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { (try? JSON.parse(data))?.array?.count ?? 0 }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(counts == Array(repeating: 200, count: 8))
    }
}

@Suite("JSON Codable and Foundation")
struct JSONInteropTests {
    struct Envelope: Codable, Equatable {
        var id: Int
        var payload: JSON
    }

    @Test func codableRoundTrip() throws {
        let payload: JSON = ["n": 1, "d": 2.5, "big": .integer(.max), "s": "x", "b": true, "z": nil, "a": [1, "2"]]
        let data = try JSONEncoder().encode(Envelope(id: 1, payload: payload))
        let decoded = try JSONDecoder().decode(Envelope.self, from: data)
        #expect(decoded == Envelope(id: 1, payload: payload))
        #expect(try JSONDecoder().decode(JSON.self, from: Data("[1, 1.5, true, 0]".utf8)) == [1, 1.5, true, 0])
        #expect(try JSONDecoder().decode(JSON.self, from: Data("1e30".utf8)) == .double(1e30))
    }

    @Test func decodeTypedValue() throws {
        struct User: Decodable, Equatable {
            var id: Int
            var name: String
        }
        let json: JSON = ["user": ["id": 9, "name": "Ada"]]
        #expect(try json["user"].decode(User.self) == User(id: 9, name: "Ada"))
        #expect(throws: DecodingError.self) { try json.decode(User.self) }
    }

    @Test func foundationObjectRoundTrip() throws {
        let json: JSON = [
            "t": true, "f": false, "one": 1, "zero": 0, "half": 0.5, "two": 2.0, "s": "é",
            "n": nil, "list": [true, 1, 1.0, "x"], "nested": ["big": .integer(.max)],
        ]
        let object = json.foundationObject
        #expect(JSON(foundationObject: object) == json)
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        #expect(try JSON.parse(data)["t"] == true)
        #expect(try JSON.parse(data)["one"] == 1)
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["s"] as? String == "é")
        #expect(dictionary["n"] is NSNull)
    }

    @Test func fromJSONSerializationOutput() throws {
        let text = #"{"t":true,"f":false,"one":1,"zero":0,"half":0.5,"neg":-7,"s":"x","n":null,"a":[1,true,0]}"#
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        let converted = try #require(JSON(foundationObject: object))
        #expect(converted == (try parse(text)))
        #expect(converted["t"] == .bool(true))
        #expect(converted["one"] == .integer(1))
        #expect(converted["zero"] == .integer(0))
        #expect(converted["a"] == [.integer(1), .bool(true), .integer(0)])
    }

    @Test func numbersVersusBooleans() {
        #expect(JSON(foundationObject: NSNumber(value: true)) == .bool(true))
        #expect(JSON(foundationObject: NSNumber(value: false)) == .bool(false))
        #expect(JSON(foundationObject: NSNumber(value: 1)) == .integer(1))
        #expect(JSON(foundationObject: NSNumber(value: 0)) == .integer(0))
        #expect(JSON(foundationObject: NSNumber(value: Int8(1))) == .integer(1))
        #expect(JSON(foundationObject: NSNumber(value: UInt8(0))) == .integer(0))
        #expect(JSON(foundationObject: NSNumber(value: 1.5)) == .double(1.5))
        #expect(JSON(foundationObject: NSNumber(value: UInt64.max)) == .double(18_446_744_073_709_551_616))
        #expect(JSON(foundationObject: true) == .bool(true))
        #expect(JSON(foundationObject: 1) == .integer(1))
        #expect(JSON(foundationObject: 2.5) == .double(2.5))
        #expect(JSON(foundationObject: "s") == .string("s"))
        #expect(JSON(foundationObject: NSString(string: "ns")) == .string("ns"))
        #expect(JSON(foundationObject: NSNull()) == .null)
        #expect(JSON(foundationObject: Date()) == nil)
        #expect(JSON(foundationObject: ["a": [Date()]] as [String: Any]) == nil)
        #expect(JSON(foundationObject: [1: "int key"]) == nil)
    }
}
