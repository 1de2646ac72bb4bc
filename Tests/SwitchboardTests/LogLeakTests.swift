import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import Testing

/// Secrets in the places the first redaction rules missed: multipart fields, the debug log's
/// `parameters:` line, OAuth's short names, JSON Web Tokens under any name, and an undecodable body's
/// snippet. Through the public API: `cURLDescription(for:)`, the debug log, an error's description.
@Suite(hangGuard, admission) struct LogLeakTests {
    /// A JSON Web Token (header `{"alg":"HS256","typ":"JWT"}`), unique to this suite.
    static let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJsZWFrLXRlc3QifQ.c2lnbmF0dXJlLWxlYWs"

    struct Upload: Request {
        var method: HTTPMethod { .post }
        var path: String { "/echo" }
        var body: RequestBody? {
            .multipart { form in
                form.append("mp-key-111", name: "api_key")
                form.append("mp-pass-222", name: "password")
                form.append("visible-333", name: "caption")
                form.append(Data([0xFF, 0xD8, 0xFF, 0x00, 0x01]), name: "photo", fileName: "a.jpg", mimeType: "image/jpeg")
            }
        }
    }

    struct OAuth: Request {
        var method: HTTPMethod { .post }
        var path: String {
            "/echo?next=https://alice:s3cret-444@example.com/home&trace=\(LogLeakTests.jwt)&q=a%26password%3Dhunter-hhh&back=%2Fcb%3Faccess_token%3Dtok-iii"
        }
        var parameterEncoding: ParameterEncoding? { .form }
        var parameters: JSON? {
            [
                "code": "code-555", "code_verifier": "verifier-666", "otp": "otp-777", "pin": "pin-888", "sid": "sid-999",
                "sig": "sig-aaa", "jwt": "jwt-bbb", "client_assertion": "assertion-ccc", "nonce": "nonce-ddd",
                "Code-Verifier": "verifier-eee", "state": .string(LogLeakTests.jwt),
                "zipcode": "zip-visible", "shipping": "ship-visible", "design": "design-visible",
            ]
        }
        var headers: HTTPHeaders { ["X-Request-Context": LogLeakTests.jwt] }
    }

    static let secrets = [
        "mp-key-111", "mp-pass-222", "s3cret-444", "code-555", "verifier-666", "otp-777", "pin-888", "sid-999", "sig-aaa", "jwt-bbb",
        "assertion-ccc", "nonce-ddd", "verifier-eee", jwt, "c2lnbmF0dXJlLWxlYWs", "hunter-hhh", "tok-iii",
    ]

    /// What the debug log and the cURL descriptions print for both requests.
    func printed() async throws -> String {
        try await withServer { server in
            let logger = CapturingLogger()
            let client = makeClient(server) {
                $0.logMode = .debug
                $0.logger = logger
            }
            _ = await client.result(Upload())
            _ = await client.result(OAuth())
            let curls = try [client.cURLDescription(for: Upload()), client.cURLDescription(for: OAuth())]
            return logger.text + "\n" + curls.joined(separator: "\n")
        }
    }

    @Test func noSecretOfTheNewRulesIsPrinted() async throws {
        let text = try await printed()
        for secret in Self.secrets {
            #expect(!text.contains(secret), "leaks \(secret):\n\(text)")
        }
        for shown in ["visible-333", "zip-visible", "ship-visible", "design-visible", "(5 bytes of binary data)", "parameters: "] {
            #expect(text.contains(shown), "\(shown) should be shown:\n\(text)")
        }
    }

    @Test func anUndecodableBodysSnippetIsRedacted() async throws {
        try await withServer { server in
            let body = #"{"user": "ada", "access_token": "tok-fff", "refresh": "\#(Self.jwt)", "list": [1, 2"#
            server.route(nil, "/broken") { _ in .json(Data(body.utf8)) }
            let logger = CapturingLogger()
            let client = makeClient(server) {
                $0.logMode = .debug
                $0.logger = logger
            }
            let error = await client.result(Get("/broken")).failure
            guard case .decoding(_, let snippet) = error else {
                Issue.record("expected a decoding error, got \(String(describing: error))")
                return
            }
            for text in [snippet, error?.description ?? "", logger.text] {
                #expect(!text.contains("tok-fff") && !text.contains(Self.jwt), "leaks: \(text)")
            }
            #expect(snippet.contains("ada"), "the rest of the snippet stays readable: \(snippet)")
        }
    }

    @Test func aDecodeErrorOfAValidBodyHasARedactedSnippet() throws {
        struct Profile: Decodable { let age: Int }
        let body = Data(#"{"age": "old", "password": "pw-ggg"}"#.utf8)
        let head = HTTPURLResponse(url: URL(string: "http://h/p")!, statusCode: 200, httpVersion: nil, headerFields: nil)!
        let response = Response(
            request: Get("/p"), httpResponse: head, data: body, json: try JSON.parse(body), timing: Timing(start: Date(), timeToFirstByte: nil, duration: 0))
        #expect(throws: NetworkError.self) { try response.decode(Profile.self) }
        do {
            _ = try response.decode(Profile.self)
        } catch {
            #expect(!error.description.contains("pw-ggg"), "\(error)")
        }
    }
}
