import Foundation

/// A request's body given as it is, rather than encoded from ``Request/parameters``: raw bytes with
/// their content type, text, or a JSON value. The base URL, URL filters, default headers and adapters
/// still apply (unlike a custom `URLRequest`).
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

    /// The bytes sent.
    public var data: Data {
        switch self {
        case .data(let data, _): data
        case .text(let text, _): Data(text.utf8)
        case .json(let json): json.serialized()
        }
    }

    /// The `Content-Type` sent (a request's own ``Request/headers`` may override it).
    public var contentType: String {
        switch self {
        case .data(_, let type), .text(_, let type): type
        case .json: "application/json"
        }
    }
}
