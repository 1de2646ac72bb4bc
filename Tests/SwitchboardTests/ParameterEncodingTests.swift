import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

@Suite("URL-encoded parameters")
struct ParameterEncodingTests {
    @Test func sortsKeysAndEncodesScalars() throws {
        let parameters: JSON = ["b": 2, "a": "x", "c": true, "d": false, "e": nil, "f": 2.0, "g": 0.25, "h": -3]
        #expect(try URLEncodedForm.encode(parameters) == "a=x&b=2&c=true&d=false&e=&f=2&g=0.25&h=-3")
        #expect(
            try URLEncodedForm.encode(["big": .integer(.max), "huge": 1e20, "inf": .double(.infinity)])
                == "big=9223372036854775807&huge=1e%2B20&inf=")
    }

    @Test func nestingAndArrays() throws {
        let parameters: JSON = [
            "filter": ["z": 1, "a": ["deep": "x"]],
            "ids": [1, 2],
            "items": [["x": 1, "b": 2], ["x": 3]],
            "empty": [], "none": [:],
        ]
        #expect(
            try URLEncodedForm.encode(parameters)
                == "filter[a][deep]=x&filter[z]=1&ids[]=1&ids[]=2&items[][b]=2&items[][x]=1&items[][x]=3")
        #expect(try URLEncodedForm.encode(["m": [[1, 2]]]) == "m[][]=1&m[][]=2")
    }

    @Test func escaping() throws {
        #expect(
            try URLEncodedForm.encode(["q": "a b+c&d=e[f]g/h?i#j%k~._-"])
                == "q=a%20b%2Bc%26d%3De%5Bf%5Dg%2Fh%3Fi%23j%25k~._-")
        #expect(try URLEncodedForm.encode(["na me[x]": ["k&=": "v"]]) == "na%20me%5Bx%5D[k%26%3D]=v")
        #expect(try URLEncodedForm.encode(["café": "é😀"]) == "caf%C3%A9=%C3%A9%F0%9F%98%80")
        #expect(URLEncodedForm.escape("AZaz09-._~") == "AZaz09-._~")
        #expect(URLEncodedForm.escape("!*'();:@$,") == "%21%2A%27%28%29%3B%3A%40%24%2C")
    }

    @Test func emptyObjectIsEmptyString() throws {
        #expect(try URLEncodedForm.encode([:]) == "")
    }

    @Test func topLevelMustBeObject() {
        for value: JSON in [["a"], "text", 1, nil, true] {
            #expect(throws: ParameterEncodingError.topLevelNotObject) { try URLEncodedForm.encode(value) }
        }
        #expect(ParameterEncodingError.topLevelNotObject.description.contains("JSON object"))
    }

    @Test func appendingQuery() throws {
        let base = try #require(URL(string: "https://api.example.com/items"))
        #expect(URLEncodedForm.appendingQuery("a=1", to: base).absoluteString == "https://api.example.com/items?a=1")
        let withQuery = try #require(URL(string: "https://api.example.com/items?sort=asc#top"))
        #expect(
            URLEncodedForm.appendingQuery("a=1&b=%C3%A9", to: withQuery).absoluteString
                == "https://api.example.com/items?sort=asc&a=1&b=%C3%A9#top")
        let emptyQuery = try #require(URL(string: "https://x.test/p?#frag"))
        #expect(URLEncodedForm.appendingQuery("a=1", to: emptyQuery).absoluteString == "https://x.test/p?a=1#frag")
        #expect(URLEncodedForm.appendingQuery("", to: withQuery) == withQuery)
    }

    @Test func appendingQueryEscapesOnlyWhatURLsForbid() throws {
        let base = try #require(URL(string: "https://x.test/p?z=1"))
        let encoded = try URLEncodedForm.encode(["f": ["a": [1]], "q": "50% off"])
        #expect(encoded == "f[a][]=1&q=50%25%20off")
        let url = URLEncodedForm.appendingQuery(encoded, to: base)
        #expect(url.absoluteString == "https://x.test/p?z=1&f%5Ba%5D%5B%5D=1&q=50%25%20off")
        let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        #expect(components.queryItems?.map(\.name) == ["z", "f[a][]", "q"])
        #expect(components.queryItems?.last?.value == "50% off")
        #expect(
            URLEncodedForm.appendingQuery("raw space#&bad%zz=é", to: base).absoluteString
                == "https://x.test/p?z=1&raw%20space%23&bad%25zz=%C3%A9")
    }

    @Test func encodingCases() {
        let all: Set<ParameterEncoding> = [.query, .form, .json]
        #expect(all.count == 3)
    }
}
