/// What one request type adds to the configuration's pipeline: URL filters, adapters, response hooks,
/// monitors, and its own retry policy. A request describes what to send; this describes what to do
/// along the way, when it differs from what every request gets.
///
/// ```swift
/// struct Upload: Request {
///     var method: HTTPMethod { .post }
///     var path: String { "/upload" }
///     var pipeline: RequestPipeline {
///         RequestPipeline { $0.retryPolicy = RetryPolicy.none; $0.monitors = [LoadingIndicator()] }
///     }
/// }
/// ```
public struct RequestPipeline: Sendable {
    /// URL filters run after the configuration's. Default: none.
    public var urlFilters: [any URLFilter] = []
    /// Adapters run after the configuration's. Default: none.
    public var adapters: [any RequestAdapter] = []
    /// Response hooks run after the configuration's. Default: none.
    public var responseHooks: [any ResponseHook] = []
    /// Whether the configuration's response hooks apply. Default: `true`; turn it off for an endpoint
    /// whose body legitimately looks like an error to them.
    public var usesConfigurationResponseHooks = true
    /// Monitors (a loading indicator, metrics) called after the configuration's. Default: none.
    public var monitors: [any EventMonitor] = []
    /// How to retry; `nil` (the default) uses ``Configuration/retryPolicy``.
    public var retryPolicy: RetryPolicy?

    /// Nothing added: the configuration's pipeline as it is.
    public init() {}

    /// A pipeline changed by `configure`.
    public init(_ configure: (inout RequestPipeline) -> Void) {
        configure(&self)
    }

    /// Nothing added: the configuration's pipeline as it is.
    public static var inherited: RequestPipeline { RequestPipeline() }
}
