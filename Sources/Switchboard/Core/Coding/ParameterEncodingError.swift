/// Why parameters could not be encoded.
///
/// ```swift
/// do {
///     _ = try URLEncodedForm.encode(["a", "b"])
/// } catch {
///     print(error)   // query/form parameters must be a JSON object at the top level ...
/// }
/// ```
public enum ParameterEncodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Query/form parameters were an array, string, number, bool or null instead of an object.
    case topLevelNotObject

    /// A sentence describing the problem.
    public var description: String {
        switch self {
        case .topLevelNotObject:
            return "query/form parameters must be a JSON object at the top level, e.g. [\"page\": 1]; "
                + "arrays and scalars have no key to encode them under"
        }
    }
}
