import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// Secrets in every position a request can carry them, through every log mode and the cURL
/// description: none of their values may appear in anything printed.
@Suite(hangGuard, admission) struct RedactionTests {
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

    @Test func shortNamesAreSecretOnlyAsWholeWords() {
        let rules = Redaction.standard
        for name in ["code", "Code", "code_verifier", "CODE-VERIFIER", "code.verifier", "otp", "user_pin", "x-sid", "sig", "jwt", "client_assertion", "Nonce", "auth.code"] {
            #expect(rules.isSecret(name), "\(name)")
        }
        for name in ["zipcode", "shipping", "design", "codec", "pinned", "sidebar", "signal", "assertions", "nonces", "barcode-type", ""] {
            #expect(!rules.isSecret(name), "\(name)")
        }
    }

    @Test func aJSONWebTokenIsRedactedWhateverItsName() {
        let rules = Redaction.standard
        let token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0."  // unsigned: an empty last segment
        #expect(Redaction.looksLikeJWT(token.utf8))
        #expect(Redaction.looksLikeJWT("eyJa.b.c.d.e".utf8), "a JWE has five segments")
        for notToken in ["eyJ", "eyJa.b", "eyJa..c", "eyJa.b.c.d", "xeyJa.b.c", "eyJa.b+c.d"] {
            #expect(!Redaction.looksLikeJWT(notToken.utf8), "\(notToken)")
        }
        #expect(rules.redact(urlText: "https://h/verify/\(token)?t=\(token)&page=2") == "https://h/verify/<redacted>?t=<redacted>&page=2")
        #expect(rules.shown(header: "X-Context", value: "Bearer " + token) == "Bearer <redacted>")
        #expect(rules.redactingTokens(in: "token \(token). Next") == "token <redacted>. Next", "a full stop after it is not part of it")
        #expect(rules.redact(JSON.object(["note": .string("a \(token) b")])) == JSON.object(["note": "a <redacted> b"]))
    }

    @Test func brokenJSONIsRedactedToTheEndOfEachSecretValue() {
        let rules = Redaction.standard
        #expect(rules.redactedLoosely(#"{"password": "p\"w", "user": "ada"}"#) == #"{"password": "<redacted>", "user": "ada"}"#)
        #expect(rules.redactedLoosely(#"{"token": {"a": [1, "}"]}, "b": 1"#) == #"{"token": "<redacted>", "b": 1"#)
        #expect(rules.redactedLoosely(#"{"api_key": 12345, "n": 2"#) == #"{"api_key": "<redacted>", "n": 2"#)
        #expect(rules.redactedLoosely(#"{"secret": "never closed"#) == #"{"secret": "<redacted>""#, "cut off: redacted to the end")
        #expect(rules.redactedLoosely(#"{"secret":"#) == #"{"secret":"<redacted>""#)
        #expect(rules.redactedLoosely(#"["password", "shown"]"#) == #"["password", "shown"]"#, "a string that is not a key")
    }

    @Test func aMultipartBodyIsShownPartByPart() {
        let rules = Redaction.standard
        let body = Data(
            ("--b\r\nContent-Disposition: form-data; name=\"api%5Fkey\"\r\n\r\nhunter2\r\n"
                + "--b\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n--b--\r\n").utf8)
        let shown = rules.redactedText(body, contentType: "multipart/form-data; boundary=b") ?? ""
        #expect(!shown.contains("hunter2") && shown.contains("hello") && shown.contains("<redacted>"), "\(shown)")
        // Parts that can't be found: only the size.
        #expect(rules.redactedText(body, contentType: "multipart/form-data; boundary=zz") == "(\(body.count) bytes of multipart data)")
        #expect(rules.redactedText(body, contentType: "multipart/form-data") == "(\(body.count) bytes of multipart data)")
        let cut = Data("--b\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nsecret-without-end".utf8)
        #expect(rules.redactedText(cut, contentType: "multipart/form-data; boundary=b") == "(\(cut.count) bytes of multipart data)")
    }

    @Test func secretsNestedInValuesAndTextAreRedacted() {
        let rules = Redaction.standard
        let url = "https://h/p?variables=%7B%22password%22%3A%22x1%22%7D&h=Bearer%20eyJa.b.c&next=%2Fcb%3Faccess_token%3Dx2&page=2"
        #expect(rules.redact(urlText: url) == "https://h/p?variables=<redacted>&h=<redacted>&next=<redacted>&page=2")
        #expect(rules.redact(JSON.object(["db": "postgres://u:x3@h/db"])) == JSON.object(["db": "<redacted>"]))
        #expect(rules.redactedLoosely("see https://a:x4@h/ now") == "see https://<redacted>@h/ now")
        #expect(rules.isSecret("user[pin]") && rules.isSecret("otp[]") && rules.isSecret(Redaction.leniently(decoding: "p%61ssword%")))
        #expect(rules.redactForm("p%61ssword%=x5&a=1") == "p%61ssword%=<redacted>&a=1")
        #expect(rules.shown(header: "Referer", value: "https://app/cb?code=x6") == "https://app/cb?code=<redacted>")
        // Compact JSON with `=` in it is not a form: its secret key is still found.
        #expect(!rules.snippet(of: Data(#"{"sig":"c2VjcmV0=="}"#.utf8), limit: 200).contains("c2VjcmV0"))
        #expect(!rules.preview(Data(#"{"otp":"123456","next":"/h?t=1""#.utf8), contentType: "application/json").contains("123456"))
        // JSON inside a JSON string, and a JSON text with `=` in it, are not read as forms.
        let nested = rules.redact(JSON.object(["payload": #"{"password":"x8","pic":"aGk="}"#]))
        #expect(!nested.description.contains("x8") && nested.description.contains("aGk="), "\(nested)")
        // A multipart body sent without its content type is still read part by part.
        let body = Data("--b\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\nx7\r\n--b--\r\n".utf8)
        #expect(!(rules.redactedText(body, contentType: nil) ?? "x7").contains("x7"))
    }

    @Test func aHostileBodyIsRedactedInLinearTime() {
        let rules = Redaction.standard
        // 1 MB of dots after `eyJ`, and a 64 KB boundary: each preview reads at most the first 16 KB,
        // and scans it a bounded number of times (before, the first was quadratic).
        let dots = Data(("eyJ" + String(repeating: ".", count: 1 << 20)).utf8)
        #expect(rules.preview(dots, contentType: "text/plain").hasSuffix("(\(dots.count) bytes)"))
        let error = NetworkError.httpStatus(ErrorResponse(statusCode: 500, headers: [:], body: dots, url: nil))
        #expect(error.description.hasPrefix("HTTP 500"))
        let boundary = String(repeating: "a", count: 65_536)
        let multipart = Data(String(repeating: "a", count: 1 << 20).utf8)
        #expect(rules.preview(multipart, contentType: "multipart/form-data; boundary=\(boundary)") == "(16384 bytes of multipart data)… (\(multipart.count) bytes)")
    }
}
