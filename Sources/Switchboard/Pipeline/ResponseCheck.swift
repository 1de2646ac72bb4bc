import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stages 6 to 8 in order, for a response from the network or the cache alike.
struct ResponseCheck<R: Request>: Sendable {
    let request: R
    /// The dispatcher's configuration when the send was made.
    let settings: ConfigurationSnapshot
    let hooks: [any ResponseHook]

    init(request: R, settings: ConfigurationSnapshot, hooks: [any ResponseHook]) {
        self.request = request
        self.settings = settings
        self.hooks = hooks
    }

    /// A check with `configuration` (outside a send).
    init(request: R, configuration: Configuration, hooks: [any ResponseHook]) {
        self.init(request: request, settings: ConfigurationSnapshot(configuration), hooks: hooks)
    }

    /// Status and content type, decode, shape and (unless `runsHooks` is false) the hooks: the
    /// response's parts (the caller adds the request).
    func validate(_ transport: TransportResponse, origin: ResponseOrigin, parsed: JSON? = nil, runsHooks: Bool = true) -> Outcome {
        let validation = request.validation
        let isJSON = request.responseFormat == .json
        let contentTypes = isJSON && !transport.data.isEmpty ? validation.contentTypes ?? settings.value.acceptableContentTypes : nil
        if let failure = StatusStage.check(transport, statusCodes: validation.statusCodes ?? settings.value.acceptableStatusCodes, contentTypes: contentTypes) {
            return .failure(failure)
        }
        var json: JSON? = .null
        var value: (any Sendable)?
        if R.Value.self != JSON.self {
            // A typed request: the value from the bytes, no tree (unless a cache entry has one).
            switch DecodeStage.run(R.Value.self, from: transport.data, decoder: settings.decoder, redaction: settings.value.redaction) {
            case .success(let decoded): (json, value) = (isJSON ? parsed : .null, decoded)
            case .failure(let error): return .failure(error)
            }
        } else if isJSON {
            switch DecodeStage.run(transport.data, parsed: parsed, redaction: settings.value.redaction) {
            case .success(let decoded): json = decoded
            case .failure(let error): return .failure(error)
            }
        }
        let parts = ResponseParts(
            head: transport.head, data: transport.data, fileURL: transport.fileURL, json: json, value: value, origin: origin, timing: transport.timing)
        return ShapeStage.run(parts, of: request, shape: isJSON ? validation.shape : nil, hooks: runsHooks ? hooks : [])
    }

    /// A stored entry as a response to the request, checked like one from the network (the hooks too,
    /// unless `runsHooks` is false).
    func entry(_ entry: CachedEntry, origin: ResponseOrigin, runsHooks: Bool = true) -> Outcome {
        guard let transported = CacheStage.transportResponse(entry) else { return .failure(.invalidRequest(reason: "an unusable cache entry")) }
        return validate(transported, origin: origin, parsed: entry.decoded?.json, runsHooks: runsHooks)
    }
}
