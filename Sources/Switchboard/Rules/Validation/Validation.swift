/// What a response must be to count as a success: status codes, content types and the shape of its
/// JSON (YTKNetwork's `jsonValidator`). Unset parts fall back to the ``Configuration``.
///
/// ```swift
/// struct UploadImage: Request {
///     var validation: Validation { .default.requiring(["imageId": .string]) }
/// }
/// ```
public struct Validation: Sendable, Hashable {
    /// Status codes that count as success; `nil` uses ``Configuration/acceptableStatusCodes``.
    public var statusCodes: StatusCodes?
    /// Acceptable MIME types of a JSON body; `nil` uses ``Configuration/acceptableContentTypes``.
    /// `*/*` accepts any type, `type/*` any subtype; an empty set accepts none.
    public var contentTypes: Set<String>?
    /// The shape the decoded JSON must have; `nil` checks nothing.
    public var shape: JSONShape?

    /// Creates a validation.
    public init(statusCodes: StatusCodes? = nil, contentTypes: Set<String>? = nil, shape: JSONShape? = nil) {
        self.statusCodes = statusCodes
        self.contentTypes = contentTypes
        self.shape = shape
    }

    /// The configuration's status codes and content types, no shape.
    public static var `default`: Validation { Validation() }

    /// A copy that also requires the JSON to have `shape`.
    public func requiring(_ shape: JSONShape) -> Validation {
        var copy = self
        copy.shape = shape
        return copy
    }

    /// A copy that accepts `codes` (instead of the configuration's).
    public func acceptingStatusCodes(_ codes: StatusCodes) -> Validation {
        var copy = self
        copy.statusCodes = codes
        return copy
    }

    /// A copy that accepts these MIME types (instead of the configuration's). `type/*` accepts any
    /// subtype; an empty set accepts none (use ``acceptingAnyContentType()`` for any).
    public func acceptingContentTypes(_ types: Set<String>) -> Validation {
        var copy = self
        copy.contentTypes = types
        return copy
    }

    /// A copy that accepts a body of any content type, or none, as JSON.
    public func acceptingAnyContentType() -> Validation {
        acceptingContentTypes(Configuration.anyContentType)
    }
}
