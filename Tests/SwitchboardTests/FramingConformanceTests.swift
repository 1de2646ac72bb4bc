import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// Bad framing is a typed error at once, on every network transport: each head that breaks HTTP/1.1's
/// syntax ends the send with ``NetworkError/malformedResponse(reason:)`` while the server holds the
/// connection open and the send's deadline (30 s) is far away, never with a guessed body or a timeout.
extension TransportConformanceTests {
    struct Framing: Sendable, CustomTestStringConvertible {
        let name: String
        let head: String
        /// A word the reason must contain.
        let reasonMentions: String
        var testDescription: String { name }
    }

    static let framings: [Framing] = [
        Framing(name: "Content-Length: 2x", head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2x\r\n\r\n{}xxxxxx", reasonMentions: "Content-Length"),
        Framing(name: "negative Content-Length", head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n{}", reasonMentions: "Content-Length"),
        Framing(
            name: "two conflicting Content-Lengths, connection open",
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}", reasonMentions: "Content-Length"),
        Framing(
            name: "a list of conflicting lengths in one field", head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2, 7\r\n\r\n{}",
            reasonMentions: "Content-Length"),
        Framing(name: "a 4-digit status code", head: "HTTP/1.1 2000 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", reasonMentions: ""),
        Framing(
            name: "a header field name with a space", head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nBad Name: x\r\nContent-Length: 2\r\n\r\n{}",
            reasonMentions: ""),
    ]

    /// Two lengths whose names differ only in case (`Content-Length: 2`, `content-length: 5`, either
    /// order), the connection held open: the libcurl transport reads every field and refuses the head
    /// at once. (URLSession's `HTTPURLResponse` keeps one of the two: see LinuxNotes.)
    @Test(arguments: TransportUnderTest.network.filter { $0 == .curl })
    func twoLengthsInTwoCasesAreRefusedAtOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server) { $0.transport = kind.factory }
            for (first, last) in [(2, 5), (5, 2)] {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(first)\r\ncontent-length: \(last)\r\n\r\n{}"
                server.route(nil, "/lengths") { _ in ServerResponse(status: 200, body: .rawHeld(Data(head.utf8))) }
                let result = await client.result(Get("/lengths").with(\.timeout, 30))
                guard case .failure(.malformedResponse(let reason)) = result else {
                    Issue.record("Content-Length \(first), then \(last), on \(kind): got \(result)")
                    continue
                }
                #expect(reason.contains("Content-Length"), "\(reason)")
            }
        }
    }

    @Test(arguments: framings, TransportUnderTest.network)
    func badFramingIsAMalformedResponseAtOnce(_ framing: Framing, _ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/framing") { _ in ServerResponse(status: 200, body: .rawHeld(Data(framing.head.utf8))) }
            let client = makeClient(server) { $0.transport = kind.factory }
            let result = await client.result(Get("/framing").with(\.timeout, 30))
            guard case .failure(.malformedResponse(let reason)) = result else {
                Issue.record("\(framing.name) on \(kind): expected malformedResponse, got \(result)")
                return
            }
            #expect(!reason.isEmpty)
            if !framing.reasonMentions.isEmpty { #expect(reason.contains(framing.reasonMentions), "\(reason)") }
        }
    }

    @Test(arguments: TransportUnderTest.network) func aRedirectsOwnHeadIsCheckedToo(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let head = "HTTP/1.1 302 Found\r\nLocation: /echo\r\nContent-Length: 0x\r\n\r\n"
            server.route(nil, "/framing") { _ in ServerResponse(status: 200, body: .rawHeld(Data(head.utf8))) }
            server.route(nil, "/far") { _ in ServerResponse(status: 302, headers: [("Location", "http://127.0.0.1:99999/echo")]) }
            let client = makeClient(server) { $0.transport = kind.factory }
            let result = await client.result(Get("/framing").with(\.timeout, 30))
            guard case .failure(.malformedResponse) = result else {
                Issue.record("\(kind): expected malformedResponse, got \(result)")
                return
            }
            // A redirect to a port outside 1–65535: refused as the server's error on the libcurl
            // transport. FoundationNetworking never asks its delegate about that redirect and never
            // ends the task (LinuxNotes): the send's deadline ends it.
            let far = await client.result(Get("/far").with(\.timeout, kind == .urlSession ? 1 : 30))
            switch (kind, far) {
            case (.urlSession, .failure(.timedOut)), (.curl, .failure(.malformedResponse)): break
            default: Issue.record("/far on \(kind): got \(far)")
            }
            #expect(server.hits("/echo") == 0, "no redirect was followed")
        }
    }

    @Test(arguments: TransportUnderTest.network) func identicalRepeatedLengthsAreOneLength(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"
            server.route(nil, "/framing") { _ in ServerResponse(status: 200, body: .rawHeld(Data(head.utf8))) }
            let client = makeClient(server) { $0.transport = kind.factory }
            let response = try await client.response(for: Get("/framing").with(\.timeout, 30))
            #expect(response.statusCode == 200 && response.data == Data("{}".utf8))
        }
    }

    @Test(arguments: TransportUnderTest.allCases) func aPortOutOfRangeIsInvalidBeforeAnythingIsSent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            // Through the dispatcher: refused while the request is built.
            let client = makeClient(server) { $0.transport = .using(kind.make([server])) }
            let error = await client.result(Get("http://127.0.0.1:99999/echo")).failure
            guard case .invalidRequest(let reason) = error else {
                Issue.record("\(kind): expected invalidRequest, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("99999"))
            // So is a base URL with such a port.
            let far = makeClient(server) {
                $0.transport = .using(kind.make([server]))
                $0.baseURL = URL(string: "http://127.0.0.1:99999")
            }
            guard case .invalidRequest? = await far.result(Get("/echo")).failure else {
                Issue.record("\(kind): a base URL with port 99999 was not refused")
                return
            }
            // A transport given the URL directly refuses it the same way.
            let direct = await transfer(kind.make([server]), TransportRequest(URLRequest(url: URL(string: "http://127.0.0.1:99999/echo")!)))
            guard case .failure(.invalidRequest)? = direct.result else {
                Issue.record("\(kind): the transport answered \(String(describing: direct.result))")
                return
            }
            #expect(direct.completions == 1)
        }
    }

    /// A `URLRequest` whose `url` was set to `nil`, given to a transport directly: refused before
    /// anything is sent, once, with no crash (FoundationNetworking's copy of such a request unwraps
    /// the URL, and the URLSession transport used to change it).
    @Test(arguments: TransportUnderTest.network) func aRequestWithoutAURLIsInvalidBeforeAnythingIsSent(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            var request = URLRequest(url: server.url("/echo"))
            request.url = nil
            let direct = await transfer(kind.make([server]), TransportRequest(request))
            guard case .failure(.invalidRequest(let reason))? = direct.result else {
                Issue.record("\(kind): the transport answered \(String(describing: direct.result))")
                return
            }
            #expect(reason.contains("no URL"))
            #expect(direct.completions == 1)
            #expect(server.hits("/echo") == 0)
        }
    }
}

/// Bare LF line ends in a response head: RFC 9112 §2.2 lets a client accept them; this package
/// refuses them on every transport (FoundationNetworking can't read them, so the libcurl transport
/// refuses them too): a head whose every line, or only some, ends in LF alone is a malformed response.
extension TransportConformanceTests {
    @Test(arguments: ["all", "some"], TransportUnderTest.network)
    func aHeadWithBareLFLineEndsIsAMalformedResponse(_ which: String, _ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", "X-Mark: lf", "Content-Length: 11"]
            let head = which == "all" ? lines.joined(separator: "\n") + "\n\n" : lines[0] + "\r\n" + lines[1...].joined(separator: "\n") + "\r\n\r\n"
            server.route(nil, "/bare-lf") { _ in ServerResponse(status: 200, body: .rawHeld(Data((head + #"{"ok":true}"#).utf8))) }
            let client = makeClient(server) { $0.transport = kind.factory }
            let result = await client.result(Get("/bare-lf").with(\.timeout, 30))
            guard case .failure(.malformedResponse) = result else {
                Issue.record("\(which) on \(kind): expected malformedResponse, got \(result)")
                return
            }
        }
    }
}
