/// Where and how request parameters (a ``JSON`` object) are encoded.
///
/// ```swift
/// let encoding: ParameterEncoding = .query
/// let text = try URLEncodedForm.encode(["page": 2, "tags": ["a", "b"]])  // "page=2&tags[]=a&tags[]=b"
/// ```
public enum ParameterEncoding: Sendable, Hashable {
    /// Percent-encoded `key=value` pairs appended to the URL's query (see ``URLEncodedForm``).
    case query
    /// The same text as `.query`, sent as an `application/x-www-form-urlencoded` body; with a multipart
    /// ``Request/body``, fields of the form instead.
    case form
    /// The parameters serialized as a JSON body (`application/json`).
    case json
}
