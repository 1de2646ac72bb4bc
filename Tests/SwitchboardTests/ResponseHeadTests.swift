import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

/// A head as a transport parses it (the libcurl transport's) reads as the `HTTPURLResponse` made from
/// it would, without making one until asked.
@Suite struct ResponseHeadTests {
    static let url = URL(string: "http://127.0.0.1/x")!

    static func head(_ fields: [(String, String)], status: Int = 200) -> ResponseHead {
        ResponseHead(url: url, statusCode: status, httpVersion: "HTTP/1.1", fields: fields.map { HTTPHeaders.Field(name: $0.0, value: $0.1) })
    }

    @Test func aParsedHeadReadsAsTheResponseMadeFromIt() {
        let head = Self.head(
            [
                ("Content-Type", "Application/JSON; charset=utf-8"), ("content-length", "42"),
                ("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("X-Custom", "v"),
            ], status: 201)
        let made = head.response
        #expect(head.statusCode == 201 && made.statusCode == 201)
        #expect(head.expectedContentLength == 42 && made.expectedContentLength == 42)
        #expect(head.mimeType == "application/json" && MediaType.mimeType(of: made) == "application/json")
        #expect(head.value("SET-COOKIE") == "a=1, b=2" && made.value(forHTTPHeaderField: "Set-Cookie") == "a=1, b=2")
        #expect(head.headers.count == 4 && head.headers["x-custom"] == "v" && head.headers["Set-Cookie"] == "a=1, b=2")
        #expect(head.response === made, "made once")
        #expect(!head.isFramed && TransferRules.expectedBodyLength(head, method: "GET") == 42)
    }

    @Test func lengthsFramingAndTypesAsTheRulesRead() {
        // Two lengths join into "10, 10", which is no length (as HTTPURLResponse reads it).
        let twice = Self.head([("Content-Length", "10"), ("Content-Length", "10")])
        #expect(twice.expectedContentLength == -1 && twice.response.expectedContentLength == -1)
        // A transfer coding or a content coding: the length doesn't count what the transport hands over.
        for framing in ["Transfer-Encoding", "content-encoding"] {
            let framed = Self.head([("Content-Length", "10"), (framing, "gzip")])
            #expect(framed.isFramed && TransferRules.expectedBodyLength(framed, method: "GET") == nil, "\(framing)")
        }
        #expect(TransferRules.expectedBodyLength(Self.head([("Content-Length", "10")], status: 204), method: "GET") == nil)
        #expect(TransferRules.expectedBodyLength(Self.head([("Content-Length", "10")]), method: "HEAD") == nil)
        #expect(Self.head([]).mimeType == nil)
        #expect(Self.head([("Content-Type", "text/html"), ("Content-Type", "application/json")]).mimeType == "application/json")
        #expect(Self.head([("Content-Type", "  TEXT/Plain ;q=1")]).mimeType == "text/plain")
        // An unusual type is read as the HTTPURLResponse reads it (so both transports agree).
        let odd = Self.head([("Content-Type", "nonsense")])
        #expect(odd.mimeType == MediaType.mimeType(of: odd.response))
    }

    /// A head from an `HTTPURLResponse` (URLSession's) reads its framing as a parsed one does, and the
    /// `Content-Length` check takes a plain length at once (up to 18 digits), yet refuses every bad one:
    /// empty, one past either end of the digits, 19 digits over `Int64.max`.
    @Test func aMadeHeadReadsFramingAndLengthsAsAParsedOneDoes() throws {
        func made(_ fields: [String: String]) throws -> HTTPURLResponse {
            try #require(HTTPURLResponse(url: Self.url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields))
        }
        for framing in ["Transfer-Encoding", "content-encoding", "CONTENT-ENCODING"] {
            let head = ResponseHead(try made(["Content-Length": "10", framing: "gzip"]))
            #expect(head.isFramed && TransferRules.expectedBodyLength(head, method: "GET") == nil, "\(framing)")
            #expect(head.isFramed == Self.head([("Content-Length", "10"), (framing, "gzip")]).isFramed)
        }
        let plain = ResponseHead(try made(["Content-Length": "10", "Content-Type": "application/json", "X-Encoding": "gzip"]))
        #expect(!plain.isFramed && TransferRules.expectedBodyLength(plain, method: "GET") == 10)
        for length in ["40", "0", "000000000000000040", "9223372036854775807", "0009223372036854775807", "40, 40"] {
            #expect(ResponseFraming.problem(in: try made(["Content-Length": length])) == nil, "\(length)")
        }
        for length in ["", "9223372036854775808", "99999999999999999999", "4x", "4/", "4:", "-4", "+4", "4 0", "40, 41", ",40", "0x10", "٤٠"] {
            #expect(ResponseFraming.problem(in: try made(["Content-Length": length])) != nil, "\(length)")
        }
        #expect(ResponseFraming.problem(in: try made(["Content-Type": "application/json"])) == nil)
    }

    @Test func aResponseFromAParsedHeadKeepsItsPublicFace() throws {
        let head = Self.head([("Content-Type", "application/json"), ("ETag", "\"v1\"")])
        let transport = TransportResponse(head: head, data: Data("{\"ok\":true}".utf8), timing: Timing(start: Date(), timeToFirstByte: nil, duration: 0))
        let request = Get("/x")
        let response = Response(request: request, parts: try ResponseCheck(request: request, configuration: Configuration(), hooks: []).validate(transport, origin: .network).get())
        #expect(response.statusCode == 200 && response.httpResponse.statusCode == 200)
        #expect(response.headers["etag"] == "\"v1\"" && response.httpResponse.value(forHTTPHeaderField: "ETag") == "\"v1\"")
        #expect(response.json["ok"] == true)
        #expect(transport.httpResponse === head.response)
        // A failing status still reports its head and body.
        let failing = TransportResponse(head: Self.head([("Content-Type", "text/html")], status: 503), data: Data("<p>busy</p>".utf8), timing: transport.timing)
        let error = ResponseCheck(request: Get("/x"), configuration: Configuration(), hooks: []).validate(failing, origin: .network).failure
        #expect(error?.statusCode == 503 && error?.errorResponse?.headers["content-type"] == "text/html")
    }
}
