import Foundation

/// What a send reads once, when it is made, from its request, the request's `pipeline` and the
/// dispatcher's configuration: every later decision holds for all its attempts, and no user code runs
/// under the send's lock.
struct SendPlan<R: Request>: Sendable {
    /// Stages 6 to 8, with the request, the configuration and the response hooks (the configuration's
    /// unless the pipeline opts out, then the request's).
    let check: ResponseCheck<R>
    /// The request's pipeline's retry policy, else the configuration's.
    let retryPolicy: RetryPolicy
    /// The monitors (logging first, when on); empty, with no context allocated, when none.
    let monitors: Monitors
    /// The request adapters: the configuration's, then the pipeline's.
    let adapters: [any RequestAdapter]
    let interceptors: [any RequestInterceptor]
    /// Each attempt's deadline, in seconds.
    let timeout: TimeInterval
    /// For a ``DownloadRequest``: where the file goes and whether it resumes.
    let download: (destination: DownloadDestination, resumes: Bool)?
    /// Where identical transfers are shared (stage 4), when this request may share one: not a download,
    /// nor a request or a dispatcher that opts out.
    let coalescer: Coalescer?
    let cachePolicy: CachePolicy?

    init(_ request: R, configuration settings: ConfigurationSnapshot, id: UInt64, coalescer: Coalescer?) {
        let pipeline = request.pipeline
        // A struct's type asked first (a metatype's conformance is cached, a value's cast boxes it); a
        // class's value always, since a subclass may be the download.
        download =
            R.self is AnyClass || R.self is any DownloadRequest.Type ? (request as? any DownloadRequest).map { ($0.destination, $0.resumes) } : nil
        check = ResponseCheck(
            request: request, settings: settings,
            hooks: joined(pipeline.usesConfigurationResponseHooks ? settings.value.responseHooks : [], pipeline.responseHooks))
        retryPolicy = pipeline.retryPolicy ?? settings.value.retryPolicy
        monitors = Monitors(joined(settings.allMonitors, pipeline.monitors), id: id, request: request)
        adapters = joined(settings.value.adapters, pipeline.adapters)
        interceptors = settings.value.interceptors
        timeout = request.timeout ?? settings.value.timeout
        cachePolicy = request.cachePolicy
        self.coalescer = settings.value.coalescesDuplicates && download == nil && request.coalescesDuplicates ? coalescer : nil
    }

    /// The adapters' identities, for the interceptors (the same ``RequestAdapter`` among them doesn't
    /// adapt again); read only when there are interceptors.
    var adapterIdentities: [ObjectIdentifier] { adapters.map(\.adapterIdentity) }

    /// Whether nothing may change the built request (then the cache key comes from what the builder
    /// recorded).
    var adaptsNothing: Bool { adapters.isEmpty && interceptors.isEmpty }

    /// The send's use of the cache (stage 3), or `nil` when it has none.
    func cacheSetting(_ prepared: RequestBuilder.Prepared, cookies: @autoclosure () -> TransportCookies) -> CacheSetting? {
        guard let cachePolicy else { return nil }
        return CacheStage.setting(
            for: check.request, isDownload: download != nil, prepared: prepared, configuration: check.settings.value, policy: cachePolicy, cookies: cookies())
    }

    /// Bodies up to this size are checked on the transport's queue; larger ones on a global queue.
    static var inlineCheckLimit: Int { 64 << 10 }

    /// Whether stages 6 to 8 may run on the transport's queue: no user code (hooks, monitors, a typed
    /// value's `init(from:)`) will run, and the body is small (or the attempt was stopped).
    func checksInline(_ result: Result<TransportResponse, NetworkError>, stopped: Bool) -> Bool {
        // A stopped attempt may still settle into user code: monitors, hooks' `didFail`, the stale
        // fallback's hooks and decode.
        check.hooks.isEmpty && monitors.isEmpty && !check.decodesTypedValue && (stopped || (try? result.get().data.count) ?? 0 < Self.inlineCheckLimit)
    }

    /// An attempt's deadline from `now` (uptime nanoseconds).
    func deadline(from now: UInt64) -> UInt64 { now &+ UInt64(max(0, min(timeout, 1e9)) * 1e9) }
}

/// `first` and `second` as one array, allocating only when both have elements (outside the generic
/// types, so that each element type's call is specialized).
private func joined<Element>(_ first: [Element], _ second: [Element]) -> [Element] {
    first.isEmpty ? second : second.isEmpty ? first : first + second
}
