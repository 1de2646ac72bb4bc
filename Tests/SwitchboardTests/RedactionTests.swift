import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// Secrets in every position a request can carry them, through every log mode and the cURL
/// description: none of their values may appear in anything printed.
@Suite(timeLimit(minutes: 1)) struct RedactionTests {
    /// Secret values, each unique so a leak names its position.
    static let secrets = [
        "sk_live_123", "tok_456", "hunter2", "k789", "sess_901", "sig_234", "cred_567", "pw_890", "pin_4321",
        "bearer_abc", "cookie_def", "proxy_ghi", "client_secret_jkl", "passwd_mno", "auth_code_pqr",
    ]

    struct Leaky: Request {
        var port: UInt16
        var status: Int
        var encoding: ParameterEncoding
        var method: HTTPMethod { .post }
        // URL user info and secret query items.
        var path: String { "http://ada:hunter2@127.0.0.1:\(port)/answer/\(status)?api_key=k789&session_id=sess_901&page=2" }
        var parameterEncoding: ParameterEncoding? { encoding }
        var parameters: JSON? {
            [
                "user": "ada", "password": "pw_890", "client_secret": "client_secret_jkl",
                "nested": ["passwd": "passwd_mno", "list": [["signature": "sig_234"]]], "credentialId": "cred_567", "pin": "pin_4321",
            ]
        }
        var headers: HTTPHeaders {
            [
                "X-Api-Key": "sk_live_123", "X-Auth-Token": "tok_456", "Authorization": "Bearer bearer_abc",
                "Cookie": "c=cookie_def", "Proxy-Authorization": "Basic proxy_ghi", "X-Oauth-Code": "auth_code_pqr",
            ]
        }
    }

    /// Installs `/answer/:status`, which answers with that status and a body without secrets.
    static func installAnswer(on server: LoopbackServer) {
        server.route(nil, "/answer/:status") { request in
            .json(["ok": request.pathParameters["status"] == "200"], status: Int(request.pathParameters["status"] ?? "") ?? 200)
        }
    }

    func printed(mode: LogMode, status: Int, encoding: ParameterEncoding) async throws -> String {
        try await withServer { server in
            Self.installAnswer(on: server)
            let logger = CapturingLogger()
            let client = makeClient(server) {
                $0.logMode = mode
                $0.logger = logger
                $0.redactedNames = ["pin"]
                $0.retryPolicy = RetryPolicy(maximumAttempts: 2, initialDelay: 0, jitter: 0).retryingNonIdempotentRequests()
            }
            let request = Leaky(port: server.port, status: status, encoding: encoding)
            _ = await client.result(request)
            let curl = try client.cURLDescription(for: request)
            // A request that can't be sent, with secrets in its URL: its error is logged too.
            _ = await client.result(Get("ftp://ada:hunter2@127.0.0.1/?api_key=k789#access_token=tok_456"))
            _ = await client.result(Get("http://ada:hunter2@127.0.0.1:\(server.port)/answer/200 x?session=sess_901"))
            return logger.text + "\n" + curl
        }
    }

    @Test(arguments: [LogMode.debug, .errors, .off], [ParameterEncoding.form, .json, .query])
    func noSecretIsPrinted(mode: LogMode, encoding: ParameterEncoding) async throws {
        for status in [200, 503] {
            let text = try await printed(mode: mode, status: status, encoding: encoding)
            for secret in Self.secrets {
                #expect(!text.contains(secret), "\(mode) \(encoding) \(status) leaks \(secret):\n\(text)")
            }
            #expect(text.contains("curl"))
            if mode == .debug { #expect(text.contains(Redaction.placeholder)) }
        }
    }

    @Test func theRulesCoverNamesUserInfoAndExtraNames() {
        let rules = Redaction(extraNames: ["Pin"])
        for name in ["Authorization", "proxy-authorization", "Set-Cookie", "X-API-KEY", "access_token", "sessionId", "PASSWD", "x-signature", "credentials", "pin"] {
            #expect(rules.isSecret(name), "\(name)")
        }
        for name in ["page", "user", "Accept", "Content-Type", "pinned"] {
            #expect(!rules.isSecret(name), "\(name)")
        }
        let url = URL(string: "https://ada:hunter2@example.com:8443/p?api_key=k&x=1#frag")!
        #expect(rules.redact(url) == "https://<redacted>@example.com:8443/p?api_key=<redacted>&x=1#frag")
        // OAuth's implicit flow puts the token in the fragment.
        #expect(rules.redact(urlText: "https://h/cb#access_token=t0k&state=1") == "https://h/cb#access_token=<redacted>&state=1")
        // Error messages quote URLs with their secrets redacted too.
        let error = NetworkError.invalidRequest(reason: #"path "ftp://ada:pw@h/?token=t" has the scheme "ftp""#)
        #expect(!rules.describe(error).contains("pw@") && !rules.describe(error).contains("token=t"))
    }
}
