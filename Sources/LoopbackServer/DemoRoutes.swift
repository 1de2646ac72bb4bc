import Foundation

extension LoopbackServer {
    /// Installs the demo app API (from the YTKNetwork/AFNetworking tutorials the demo replays):
    /// `GET /users/:id`, `POST /register`, `GET /images/:id`, `GET`/`POST /api.php`, `POST /events`, `POST /iphone/image/upload`
    /// `POST /upload/images`, `GET /files/demo.bin` (8 MiB, with ranges) and `POST /files/demo.bin/cut?at=N`
    /// (its next response stops at byte N). ``standard(port:)`` calls this for you.
    public func installDemoRoutes() {
        route("GET", "/users/:id", DemoRoutes.user)
        route("POST", "/register", DemoRoutes.register)
        route("GET", "/images/:id", DemoRoutes.image)
        route("GET", "/api.php", DemoRoutes.list)
        route("POST", "/api.php", DemoRoutes.list)
        route("POST", "/events", DemoRoutes.events)
        route("POST", "/iphone/image/upload", DemoRoutes.uploadImage)
        route("POST", "/upload/images", DemoRoutes.uploadImages)
        // The README's token sample starts with "stale-token", which this API answers as some do: a 403
        // with an error code (the sample's `isExpired` names it); any other wrong token gets a 401.
        route("GET", "/me") { request in
            switch request.header("Authorization") {
            case "Bearer fresh-token": .json(["name": "Ada", "id": "1"])
            case "Bearer stale-token": .json(["error": "token_expired"], status: 403)
            default: .json(["error": "token expired"], status: 401)
            }
        }
        route("POST", "/auth/refresh") { _ in .json(["token": "fresh-token"]) }
        // An 8 MiB file served a little slowly (a progress bar has something to show), and a way to
        // cut its next response off midway, for the demo's resumed download.
        let file = LargeResource(length: 8 << 20)
        file.pausePerPiece = 0.01
        serve(file, at: "/files/demo.bin")
        route("POST", "/files/demo.bin/cut") { request in
            let offset = request.intQuery("at") ?? (3 << 20)
            file.abort(atOffset: offset)
            return .json(["cutAt": offset])
        }
    }
}

/// The handlers behind ``LoopbackServer/installDemoRoutes()``.
enum DemoRoutes {
    static func user(_ request: ServerRequest) -> ServerResponse {
        let id = request.pathParameters["id"] ?? ""
        let version: Any = orNull(request.queryItems["version"])
        return .json([
            "user": ["id": id, "name": "User \(id)", "nickname": "nick\(id)", "level": 3] as [String: Any],
            "version": version,
        ])
    }

    static func register(_ request: ServerRequest) -> ServerResponse {
        var fields: [String: String] = [:]
        if let object = request.bodyJSON as? [String: Any] {
            for (key, value) in object { fields[key] = value as? String ?? "\(value)" }
        } else {
            fields = request.formItems
        }
        let username = fields["username"] ?? ""
        let password = fields["password"] ?? ""
        if username.isEmpty || password.count < 4 {
            let message = username.isEmpty ? "username is required" : "password must have at least 4 characters"
            return .json(["error": "invalid", "message": message], status: 400)
        }
        if username == "taken" { return .json(["error": "taken"], status: 409) }
        return .json(["userId": "u-\(username)", "username": username])
    }

    static func image(_ request: ServerRequest) -> ServerResponse {
        let id = request.pathParameters["id"] ?? ""
        if id == "missing.jpg" || id == "missing" { return .json(["error": "not found", "image": id], status: 404) }
        return ServerResponse(status: 200, headers: [("Content-Type", "image/jpeg")], body: .data(fakeJPEG(id: id)))
    }

    /// About 2 KiB starting with a JFIF header (`FF D8 FF E0`) and ending with `FF D9`; the filler depends on `id`.
    static func fakeJPEG(id: String) -> Data {
        var bytes: [UInt8] = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00,
            0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
        ]
        var seed = checksum(Data(id.utf8)) | 1
        let fillerCount = 2048 - bytes.count - 2 + Int(seed % 64)
        for _ in 0..<fillerCount {
            seed ^= seed << 13
            seed ^= seed >> 17
            seed ^= seed << 5
            bytes.append(UInt8(truncatingIfNeeded: seed) & 0x7F)  // never 0xFF, so no stray markers
        }
        bytes += [0xFF, 0xD9]
        return Data(bytes)
    }

    /// The seed's list API. `GET` reads the query; `POST` reads a form or JSON body (the common request
    /// of seed 001 sends either). The query's `version` (a URL filter's) is echoed either way.
    static func list(_ request: ServerRequest) -> ServerResponse {
        var fields = request.queryItems
        if request.method == "POST" {
            if let json = request.bodyJSON as? [String: Any] {
                for (key, value) in json { fields[key] = "\(value)" }
            } else {
                fields.merge(request.formItems) { _, body in body }
            }
        }
        // The seed's own spelling (`City`, `SortBy`) and lower camel case both work.
        for (seed, key) in [("City", "city"), ("SortBy", "sortBy"), ("Start", "start"), ("End", "end")] where fields[key] == nil {
            fields[key] = fields[seed]
        }
        guard let type = fields["type"], !type.isEmpty else {
            return .json(["errorCode": 2, "message": "missing type"])
        }
        let start = max(0, fields["start"].flatMap { Int($0) } ?? 0)
        let end = min(max(start, fields["end"].flatMap { Int($0) } ?? start + 10), start + 10_000)
        let items: [[String: Any]] = (start..<end).map { ["id": $0, "title": "Item \($0)"] }
        return .json([
            "errorCode": 0,
            "method": request.method,
            "type": type,
            "city": orNull(fields["city"]),
            "lid": orNull(fields["lid"]),
            "sortBy": orNull(fields["sortBy"]),
            "list": items,
            "version": orNull(request.queryItems["version"]),
        ])
    }

    /// Seed 000's custom request: a gzipped JSON array of events (`Content-Encoding: gzip`).
    static func events(_ request: ServerRequest) -> ServerResponse {
        let gzipped = request.header("Content-Encoding")?.lowercased() == "gzip"
        guard let body = request.decodedBody else {
            return .json(["error": "undecodable gzip body"], status: 400)
        }
        guard let events = (try? JSONSerialization.jsonObject(with: body)) as? [Any] else {
            return .json(["error": "expected a JSON array of events"], status: 400)
        }
        return .json([
            "received": events.count, "encoding": gzipped ? "gzip" : "identity", "sentBytes": request.body.count, "decodedBytes": body.count,
            "contentType": orNull(request.header("Content-Type")),
        ])
    }

    static func uploadImage(_ request: ServerRequest) -> ServerResponse {
        guard let boundary = MultipartParser.boundary(fromContentType: request.header("Content-Type")) else {
            return .json(["error": "expected multipart/form-data"], status: 400)
        }
        let parts = MultipartParser.parse(request.body, boundary: boundary)
        guard let image = parts.first(where: { $0.name == "image" }) else {
            return .json(["error": "no image"], status: 400)
        }
        return .json([
            "imageId": "img-" + hex8(checksum(image.data)),
            "fileName": orNull(image.fileName),
            "size": image.data.count,
            "contentType": orNull(image.contentType),
        ])
    }

    static func uploadImages(_ request: ServerRequest) -> ServerResponse {
        guard let boundary = MultipartParser.boundary(fromContentType: request.header("Content-Type")) else {
            return .json(["error": "expected multipart/form-data"], status: 400)
        }
        let parts = MultipartParser.parse(request.body, boundary: boundary)
        let files = parts.filter { $0.fileName != nil }
        var fields: [String: String] = [:]
        for part in parts where part.fileName == nil { fields[part.name] = String(decoding: part.data, as: UTF8.self) }
        return .json([
            "count": files.count,
            "files": files.map { file -> [String: Any] in
                [
                    "name": file.name, "fileName": file.fileName ?? "", "size": file.data.count,
                    "contentType": orNull(file.contentType),
                ]
            },
            "fields": fields,
        ])
    }

    /// `value`, or `NSNull()` (JSON `null`) when it is `nil`.
    static func orNull(_ value: String?) -> Any {
        value.map { $0 as Any } ?? NSNull()
    }

    /// 32-bit FNV-1a.
    static func checksum(_ data: Data) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in data {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }

    static func hex8(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
