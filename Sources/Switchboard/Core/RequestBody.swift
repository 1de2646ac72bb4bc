import Foundation

/// A request's body given as it is, rather than encoded from ``Request/parameters``: raw bytes with
/// their content type, text, a JSON value, a file on disk or a multipart form. The base URL, URL
/// filters, default headers and adapters still apply (unlike a custom `URLRequest`).
///
/// ```swift
/// struct UploadAvatar: Request {
///     let png: Data
///     var method: HTTPMethod { .put }
///     var path: String { "/me/avatar" }
///     var body: RequestBody? { .data(png, contentType: "image/png") }
/// }
/// ```
public enum RequestBody: Sendable, Hashable {
    /// Bytes, sent with `contentType`.
    case data(Data, contentType: String)
    /// Text in UTF-8, sent with `contentType` (`text/plain; charset=utf-8` by default).
    case text(String, contentType: String = "text/plain; charset=utf-8")
    /// A JSON value, serialized, sent as `application/json`.
    case json(JSON)
    /// A file's contents, read as they are sent (memory stays bounded whatever its size), with a
    /// `Content-Length` of the file's size. A URL that is not a readable regular file fails the send
    /// with ``NetworkError/invalidRequest(reason:)`` before anything is sent.
    case file(URL, contentType: String = "application/octet-stream")
    /// A `multipart/form-data` body; see ``MultipartFormData``. The request's ``Request/parameters``
    /// become fields of the form (unless its ``Request/parameterEncoding`` is `.query`: then the
    /// query; `.json` fails the send with ``NetworkError/invalidRequest(reason:)``).
    case multipart(MultipartFormData)
    /// An `Encodable` value, encoded to JSON (`application/json`) when the request is built; see
    /// ``encodable(_:coding:)``.
    case encoded(EncodableBody)

    /// An `Encodable` value, sent as JSON (`application/json`): encoded when the request is built, with
    /// `coding`'s strategies or else ``Configuration/jsonCoding``'s. A value that can't be encoded (a
    /// non-finite `Double`, an `encode(to:)` that throws) fails the send with
    /// ``NetworkError/invalidRequest(reason:)`` before anything is sent.
    ///
    /// ```swift
    /// struct CreatePost: Request {
    ///     typealias Value = Post
    ///     let draft: NewPost
    ///     var method: HTTPMethod { .post }
    ///     var path: String { "/posts" }
    ///     var body: RequestBody? { .encodable(draft) }
    /// }
    /// ```
    public static func encodable(_ value: some Encodable & Sendable, coding: JSONCoding? = nil) -> RequestBody {
        .encoded(EncodableBody(value, coding: coding))
    }

    /// A `multipart/form-data` body built by `build`.
    ///
    /// ```swift
    /// var body: RequestBody? {
    ///     .multipart { form in
    ///         form.append(jpeg, name: "image", fileName: "image.jpg", mimeType: "image/jpeg")
    ///     }
    /// }
    /// ```
    /// - Parameters:
    ///   - boundary: the boundary; random by default.
    ///   - build: appends the parts.
    public static func multipart(boundary: String? = nil, _ build: (inout MultipartFormData) -> Void) -> RequestBody {
        var form = MultipartFormData(boundary: boundary)
        build(&form)
        return .multipart(form)
    }

    /// The bytes sent, in memory. A file is read whole and a multipart form assembled in memory for
    /// this (empty when that fails); a send never does that, it streams large bodies from disk. An
    /// encodable value is encoded with its own strategies or Foundation's defaults (a send uses the
    /// configuration's; empty when it can't be encoded).
    public var data: Data {
        switch self {
        case .data(let data, _): data
        case .text(let text, _): Data(text.utf8)
        case .json(let json): json.serialized()
        case .file(let url, _): (try? Data(contentsOf: url)) ?? Data()
        case .multipart(let form): form.assembledInMemory()
        case .encoded(let body): (try? body.encoded()) ?? Data()
        }
    }

    /// The `Content-Type` sent (a request's own ``Request/headers`` may override it).
    public var contentType: String {
        switch self {
        case .data(_, let type), .text(_, let type), .file(_, let type): type
        case .json, .encoded: "application/json"
        case .multipart(let form): form.contentType
        }
    }
}

extension RequestBody {
    /// Whether building the body reads files or streams (a multipart form that has them).
    var isSlowToBuild: Bool {
        if case .multipart(let form) = self { return form.mayBeSlowToAssemble }
        return false
    }
}
