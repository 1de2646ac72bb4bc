import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

/// Request bodies gzipped by zlib (loaded at run time): on when asked for, above a threshold, never
/// over a body the request encodes itself, and failing closed.
@Suite(hangGuard, admission) struct BodyCompressionTests {
    /// A JSON body of `count` similar events: compressible, like real telemetry.
    struct PostEvents: Request {
        var count = 200
        var compression: BodyCompression?
        var ownEncoding: String?
        var method: HTTPMethod { .post }
        var path: String { "/echo" }
        var body: RequestBody? { .encodable((0..<count).map { ["event": "tap", "screen": "home", "n": "\($0 % 7)"] }) }
        var bodyCompression: BodyCompression? { compression }
        var headers: HTTPHeaders { ownEncoding.map { ["Content-Encoding": $0] } ?? [:] }
    }

    /// The gzip stream's trailer, read without zlib: the CRC-32 and the length of what it holds.
    static func trailer(_ gzip: Data) -> (crc: UInt32, length: UInt32)? {
        let bytes = [UInt8](gzip)
        guard bytes.count >= 18, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 8 else { return nil }
        func word(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }
        return (word(bytes.count - 8), word(bytes.count - 4))
    }

    @Test(arguments: TransportUnderTest.network) func aDispatcherThatAsksGzipsBodiesAboveTheThreshold(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.bodyCompression = .gzip() }
            let echo = try await client.response(for: PostEvents()).json
            #expect(echo["contentEncoding"] == "gzip")
            // The server undid it (zlib's inflate) and read the JSON.
            #expect(echo["json"].array?.count == 200)
            let sent = try #require(Data(base64Encoded: echo["bodyBase64"].string ?? ""))
            let plain = try EncodableBody((0..<200).map { ["event": "tap", "screen": "home", "n": "\($0 % 7)"] }).encoded()
            #expect(sent.count * 5 < plain.count, "\(sent.count) bytes sent for \(plain.count)")
            // The gzip wrapper checked without zlib: its trailer names exactly the plain body.
            let trailer = try #require(Self.trailer(sent))
            #expect(trailer.length == UInt32(plain.count))
            #expect(trailer.crc == Gzip.crc32([UInt8](plain)))
            // Below the threshold: as it is.
            let small = try await client.response(for: PostEvents(count: 2)).json
            #expect(small["contentEncoding"] == "")
            #expect(small["json"].array?.count == 2)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRequestDecidesForItself(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let off = makeClient(server, on: kind)
            let asked = try await off.response(for: PostEvents(count: 2, compression: .gzip(minimumSize: 0))).json
            #expect(asked["contentEncoding"] == "gzip")
            #expect(asked["json"].array?.count == 2)
            let on = makeClient(server, on: kind) { $0.bodyCompression = .gzip(minimumSize: 0) }
            let declined = try await on.response(for: PostEvents(compression: BodyCompression.none)).json
            #expect(declined["contentEncoding"] == "")
            // A body the request encodes itself is never encoded again.
            let own = try await on.response(for: PostEvents(count: 3, ownEncoding: "identity")).json
            #expect(own["contentEncoding"] == "identity")
            #expect(own["json"].array?.count == 3)
        }
    }

    @Test func byDefaultNothingIsCompressed() {
        #expect(Configuration().bodyCompression == .none)
        #expect(PostEvents().bodyCompression == nil)
    }

    @Test func zlibRoundTripsAndRefusesDamage() throws {
        let zlib = try Zlib.shared.get()
        let plain = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 % 251) })
        let packed = try zlib.gzip(plain, level: 9)
        #expect(packed.count < plain.count / 10)
        #expect(zlib.gunzip(packed, limit: 1 << 20) == plain)
        #expect(zlib.gunzip(packed.prefix(packed.count / 2), limit: 1 << 20) == nil, "a truncated stream")
        var damaged = packed
        damaged[damaged.count / 2] ^= 0xFF
        #expect(zlib.gunzip(damaged, limit: 1 << 20) == nil, "a damaged stream")
        #expect(zlib.gunzip(packed, limit: 1000) == nil, "more than the limit")
        #expect(try zlib.gzip(Data(), level: 6).count >= 18, "an empty body is still a gzip stream")
    }
}

extension BodyCompressionTests {
    @Test func aMissingZlibIsATypedErrorNamingIt() {
        let loaded = Result { () throws(NetworkError) in try Zlib(libraryNames: ["libz-switchboard-missing.so.9"]) }
        guard case .failure(.invalidRequest(let reason)) = loaded else {
            Issue.record("a missing zlib must be invalidRequest, got \(loaded)")
            return
        }
        #expect(reason.contains("zlib") && reason.contains("libz-switchboard-missing.so.9"))
    }

    @Test func aNegativeLevelIsZlibsDefaultNotStoredBlocks() throws {
        let zlib = try Zlib.shared.get()
        let plain = Data(String(repeating: "level ", count: 2000).utf8)
        let byDefault = try zlib.gzip(plain, level: -1)
        #expect(byDefault == (try zlib.gzip(plain, level: 6)))
        #expect(byDefault.count < plain.count / 10)
    }

    @Test func anEncodableBodysDescriptionHidesItsValue() {
        struct Login: Encodable, Sendable { let user = "ada", password = "hunter2" }
        let body = EncodableBody(Login())
        #expect(!body.description.contains("hunter2"))
        #expect(!"\(RequestBody.encodable(Login()))".contains("hunter2"))
        #expect(body.description.contains("Login"))
    }
}

extension BodyCompressionTests {
    struct PostBytes: Request {
        let bytes: Data
        var headers: HTTPHeaders = [:]
        var method: HTTPMethod { .post }
        var path: String { "/echo" }
        var body: RequestBody? { .data(bytes, contentType: "application/octet-stream") }
        var bodyCompression: BodyCompression? { .gzip(minimumSize: 0) }
    }

    /// Bytes gzip can't shrink (random, like an image) go as they are; a request's own encoding, in any
    /// spelling of the field's name, is never encoded again.
    @Test(arguments: TransportUnderTest.network) func onlyWhatGetsSmallerIsCompressed(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            var generator = SystemRandomNumberGenerator()
            let noise = Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let random = try await client.response(for: PostBytes(bytes: noise)).json
            #expect(random["contentEncoding"] == "")
            #expect(Data(base64Encoded: random["bodyBase64"].string ?? "") == noise)
            let text = Data(String(repeating: "compress me ", count: 500).utf8)
            let own = try await client.response(for: PostBytes(bytes: text, headers: ["content-encoding": "identity"])).json
            #expect(own["contentEncoding"] == "identity")
            #expect(Data(base64Encoded: own["bodyBase64"].string ?? "") == text)
            let packed = try await client.response(for: PostBytes(bytes: text)).json
            #expect(packed["contentEncoding"] == "gzip")
            #expect(packed["body"].string == String(repeating: "compress me ", count: 500))
        }
    }
}
