import Foundation

extension LoopbackServer {
    /// Installs the standard test routes: `/echo`, `/status/:code`, `/delay/:ms`, `/concurrent/:key`, `/hits`, `/drip`, `/abort`, `/close`,
    /// `/bytes/:n`, `/json/:kib`, `/small`, `/basic-auth/:user/:pass`, `/unauthorized-no-challenge`,
    /// `/redirect/:code`, `/redirect-chain/:n`, `/malformed-json`, `/wrong-content-type`, `/html`, `/gzip`, `/empty`,
    /// `/empty-json`, `/flaky/:key`, `/body-error`, `/etag/:name`, `/counter/:key`, `/set-cookie`, `/headers-size/:n`, `/large/:bytes`
    /// (a ``LargeResource``) and the upload sinks `/upload/echo` and `/upload/sink` (an ``UploadDigest``).
    /// ``standard(port:)`` calls this for you.
    public func installStandardRoutes() {
        route(nil, "/echo", StandardRoutes.echo)
        route(nil, "/echo/*", StandardRoutes.echo)
        route(nil, "/status/:code", StandardRoutes.status)
        route(nil, "/delay/:ms", StandardRoutes.delay)
        // Counts the requests in progress at once per key (see concurrencyPeak). `?ms=` holds each for
        // that long; `?together=N&of=M` holds each until N of the key are in progress at once, or M
        // (default N) have arrived in all (at most 20 s): a peak that doesn't depend on timing.
        // `?hold=release` holds each until the test calls `release(key)` (at most 30 s).
        route(nil, "/concurrent/:key") { [core] request in
            let key = request.pathParameters["key"] ?? ""
            let now = core.state.withLock { state -> Int in
                var entry = state.concurrent[key] ?? (0, 0, 0)
                entry.now += 1
                entry.arrived += 1
                entry.peak = max(entry.peak, entry.now)
                state.concurrent[key] = entry
                return entry.now
            }
            if request.queryItems["hold"] == "release" {
                request.wait(timeout: 30) { core.state.withLock { $0.released.contains(key) } }
            } else if let together = request.intQuery("together") {
                let all = request.intQuery("of") ?? together
                request.wait(timeout: 20) {
                    core.state.withLock { state in state.concurrent[key].map { $0.now >= together || $0.arrived >= all } ?? true }
                }
            } else {
                request.sleep(seconds: Double(min(max(0, request.intQuery("ms") ?? 100), 60_000)) / 1000)
            }
            core.state.withLock { $0.concurrent[key]?.now -= 1 }
            return .json(["key": key, "inProgress": now, "index": request.intQuery("i") ?? -1])
        }
        // How many requests reached `?path=` so far (what a server-side request counter would show).
        route("GET", "/hits") { [core] request in
            let path = request.queryItems["path"] ?? ""
            return .json(["path": path, "hits": core.state.withLock { $0.hits[path] ?? 0 }])
        }
        route(nil, "/drip", StandardRoutes.drip)
        route(nil, "/abort", StandardRoutes.abort)
        route(nil, "/close") { _ in ServerResponse(status: 200, body: .closeWithoutResponse) }
        route(nil, "/bytes/:n", StandardRoutes.bytes)
        let jsonCache = Locked([Int: Data]())
        route(nil, "/json/:kib") { StandardRoutes.json($0, cache: jsonCache) }
        let small = Data(#"{"ok":true,"id":1,"name":"switchboard"}"#.utf8)
        route(nil, "/small") { _ in .json(small) }
        route(nil, "/basic-auth/:user/:pass", StandardRoutes.basicAuth)
        route(nil, "/unauthorized-no-challenge") { _ in .json(["error": "unauthorized"], status: 401) }
        route(nil, "/redirect/:code", StandardRoutes.redirect)
        route(nil, "/redirect-chain/:n", StandardRoutes.redirectChain)
        route(nil, "/malformed-json") { _ in .json(Data(#"{"user": {"id": 1,"#.utf8)) }
        route(nil, "/wrong-content-type") { _ in .text("hello, not json") }
        route(nil, "/html") { _ in .text("<html><body>hi</body></html>", contentType: "text/html; charset=utf-8") }
        route(nil, "/gzip") { _ in
            let body = Data(#"{"gzipped":true,"items":[1,2,3]}"#.utf8)
            return ServerResponse(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                body: .data(Gzip.stored(body)))
        }
        route(nil, "/empty") { _ in .status(204) }
        route(nil, "/empty-json") { _ in .json(Data()) }
        let flakyCounts = Locked([String: Int]())
        route(nil, "/flaky/:key") { StandardRoutes.flaky($0, counts: flakyCounts) }
        route(nil, "/body-error") { _ in .json(["errorCode": 3, "message": "session expired"]) }
        route(nil, "/etag/:name", StandardRoutes.etag)
        // A count per key that grows with every request: a fresh answer differs from a stored one.
        // `?nostore=1` adds `Cache-Control: no-store`.
        let counters = Locked([String: Int]())
        route(nil, "/counter/:key") { request in
            let key = request.pathParameters["key"] ?? ""
            let count = counters.withLock { counts -> Int in
                counts[key, default: 0] += 1
                return counts[key]!
            }
            var headers = request.intQuery("nostore") == 1 ? [("Cache-Control", "no-store")] : []
            // `?vary=Accept-Language` answers with that `Vary` (for the cache's tests).
            if let vary = request.queryItems["vary"] { headers.append(("Vary", vary)) }
            return .json(
                ["key": key, "count": count, "auth": request.header("Authorization") ?? "", "cookie": request.header("Cookie") ?? ""], headers: headers)
        }
        route(nil, "/set-cookie") { request in
            // `?value=` sets another value than `abc`.
            let value = request.queryItems["value"] ?? "abc"
            return ServerResponse(
                status: 200, headers: [("Content-Type", "application/json"), ("Set-Cookie", "session=\(value); Path=/")],
                body: .data(Data(#"{"cookie":"session"}"#.utf8)))
        }
        // A file of any size (up to 64 GiB), made as it is sent, with ranges and validators.
        let files = Locked([Int: LargeResource]())
        route("GET", "/large/:bytes") { request in
            let length = min(max(0, request.intParameter("bytes") ?? 0), 64 << 30)
            let file = files.withLock { cache in
                if let file = cache[length] { return file }
                let file = LargeResource(length: length)
                if cache.count < 16 { cache[length] = file }
                return file
            }
            return file.respond(to: request)
        }
        // Uploads of any size: each part's name, file name, type, size and checksum (see UploadDigest).
        sink(nil, "/upload/echo") { _, digest in .json(digest.json) }
        sink(nil, "/upload/sink") { _, digest in .json(digest.json) }
        route(nil, "/headers-size/:n") { request in
            let size = min(max(0, request.intParameter("n") ?? 0), 1_048_576)
            return .json(["headerSize": size], headers: [("X-Big", String(repeating: "x", count: size))])
        }
    }
}

/// The handlers behind ``LoopbackServer/installStandardRoutes()``.
enum StandardRoutes {
    static func echo(_ request: ServerRequest) -> ServerResponse {
        var headers: [String: String] = [:]
        for (name, value) in request.headers { headers[name] = value }
        var json: Any = NSNull()
        if request.contentTypeContains("json"), let parsed = request.bodyJSON { json = parsed }
        let form: [String: String] = request.contentTypeContains("application/x-www-form-urlencoded") ? request.formItems : [:]
        return .json([
            "method": request.method,
            "path": request.path,
            "query": request.query,
            "args": request.queryItems,
            "headers": headers,
            "body": request.bodyText ?? "",
            "bodyBase64": request.body.base64EncodedString(),
            "contentEncoding": request.header("Content-Encoding") ?? "",
            "json": json,
            "form": form,
        ])
    }

    static func status(_ request: ServerRequest) -> ServerResponse {
        guard let code = request.intParameter("code"), (200...599).contains(code) else {
            return .json(["error": "invalid status code"], status: 400)
        }
        return .status(code)
    }

    static func delay(_ request: ServerRequest) -> ServerResponse {
        let milliseconds = min(max(0, request.intParameter("ms") ?? 0), 600_000)
        request.sleep(seconds: Double(milliseconds) / 1000)
        return .json(["delayed": milliseconds])
    }

    static func drip(_ request: ServerRequest) -> ServerResponse {
        let count = min(max(0, request.intQuery("chunks") ?? 5), 100_000)
        let interval = min(max(0, request.intQuery("interval") ?? 50), 60_000)
        let size = min(max(1, request.intQuery("size") ?? 16), 1_048_576)
        let chunk = Data(repeating: UInt8(ascii: "a"), count: size)
        return ServerResponse(
            status: 200, headers: [("Content-Type", "application/octet-stream")],
            body: .chunks(Array(repeating: chunk, count: count), interval: Double(interval) / 1000))
    }

    static func abort(_ request: ServerRequest) -> ServerResponse {
        let declared = min(max(1, request.intQuery("declared") ?? 1000), 1 << 30)
        let sent = min(max(0, request.intQuery("sent") ?? 100), declared - 1, 16 << 20)
        var prefix = Data(#"{"data": ""#.utf8)
        if prefix.count < sent { prefix.append(Data(repeating: UInt8(ascii: "a"), count: sent - prefix.count)) }
        return ServerResponse(
            status: 200, headers: [("Content-Type", "application/json")],
            body: .abort(sending: prefix.prefix(sent), declaredLength: declared))
    }

    static func bytes(_ request: ServerRequest) -> ServerResponse {
        let count = min(max(0, request.intParameter("n") ?? 0), 256 << 20)
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count { bytes[index] = UInt8(truncatingIfNeeded: index) }
        let data = Data(bytes)
        return ServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .data(data))
    }

    static func json(_ request: ServerRequest, cache: Locked<[Int: Data]>) -> ServerResponse {
        let kib = min(max(0, request.intParameter("kib") ?? 1), 64 * 1024)
        if let cached = cache.withLock({ $0[kib] }) { return .json(cached) }
        let data = makeJSON(kib: kib)
        cache.withLock { $0[kib] = data }
        return .json(data)
    }

    /// `{"items":[{"id":1,"name":"item 1",…},…]}` of at least `kib` KiB (at least one item).
    static func makeJSON(kib: Int) -> Data {
        let target = kib * 1024
        var text = #"{"items":["#
        text.reserveCapacity(target + 256)
        var id = 1
        repeat {
            if id > 1 { text += "," }
            text += #"{"id":\#(id),"name":"item \#(id)","price":\#(id % 100).5,"active":\#(id % 2 == 0),"#
            text += #""tags":["alpha","beta"],"description":"a generated item for decode benchmarks"}"#
            id += 1
        } while text.utf8.count + 2 < target
        text += "]}"
        return Data(text.utf8)
    }

    static func basicAuth(_ request: ServerRequest) -> ServerResponse {
        let user = request.pathParameters["user"] ?? ""
        let password = request.pathParameters["pass"] ?? ""
        let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        if request.header("Authorization") == expected {
            // `?then=<path>`: once authorized, a 302 there.
            if let then = request.queryItems["then"], !then.isEmpty {
                return .json(["redirect": then], status: 302, headers: [("Location", then)])
            }
            return .json(["authenticated": true, "user": user])
        }
        return .json(["authenticated": false], status: 401, headers: [("WWW-Authenticate", #"Basic realm="loopback""#)])
    }

    static func redirect(_ request: ServerRequest) -> ServerResponse {
        guard let code = request.intParameter("code"), [300, 301, 302, 303, 307, 308].contains(code) else {
            return .json(["error": "unsupported redirect code"], status: 400)
        }
        let location = request.queryItems["to"].flatMap { $0.isEmpty ? nil : $0 } ?? "/echo"
        return .json(["redirect": location], status: code, headers: [("Location", location)])
    }

    static func redirectChain(_ request: ServerRequest) -> ServerResponse {
        let remaining = max(0, request.intParameter("n") ?? 0)
        let location = remaining <= 0 ? "/echo" : "/redirect-chain/\(remaining - 1)"
        return .json(["redirect": location], status: 302, headers: [("Location", location)])
    }

    static func flaky(_ request: ServerRequest, counts: Locked<[String: Int]>) -> ServerResponse {
        let key = request.pathParameters["key"] ?? ""
        let attempt = counts.withLock { counts -> Int in
            counts[key, default: 0] += 1
            return counts[key]!
        }
        let failures = max(0, request.intQuery("failures") ?? 1)
        guard attempt > failures else {
            if request.queryItems["mode"] == "abort" {
                return ServerResponse(
                    status: 200, headers: [("Content-Type", "application/json")],
                    body: .abort(sending: Data("{\"partial\":".utf8), declaredLength: 100))
            }
            let status = request.intQuery("status").flatMap { (200...599).contains($0) ? $0 : nil } ?? 503
            var headers: [(String, String)] = []
            if let retryAfter = request.queryItems["retryAfter"], !retryAfter.isEmpty {
                headers.append(("Retry-After", retryAfter))
            }
            return .json(["error": "flaky", "attempt": attempt, "status": status], status: status, headers: headers)
        }
        return .json(["attempt": attempt])
    }

    static let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"

    static func etag(_ request: ServerRequest) -> ServerResponse {
        let validators = [("ETag", #""v1""#), ("Last-Modified", lastModified), ("Cache-Control", "no-cache")]
        let notModified: Bool
        if let match = request.header("If-None-Match") {
            notModified = match.split(separator: ",").contains {
                let tag = $0.trimmingCharacters(in: .whitespaces)
                return tag == "*" || tag == #""v1""# || tag == #"W/"v1""#
            }
        } else {
            notModified = request.header("If-Modified-Since") == lastModified
        }
        if notModified { return ServerResponse(status: 304, headers: validators) }
        return .json(["name": request.pathParameters["name"] ?? "", "version": 1], headers: validators)
    }
}

extension ServerRequest {
    /// The path parameter `name` as an integer.
    func intParameter(_ name: String) -> Int? {
        pathParameters[name].flatMap { Int($0) }
    }

    /// The query item `name` as an integer.
    func intQuery(_ name: String) -> Int? {
        queryItems[name].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
}
