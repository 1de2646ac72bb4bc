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

    /// Status and content type, the JSON tree, shape and (unless `runsHooks` is false) the hooks, then
    /// a typed request's value: the response's parts (the caller adds the request). A typed request's
    /// tree is parsed only when a shape or hooks read it, and its value decoded after them, so that a
    /// hook's verdict on a 200 carrying an error code (``APIErrorCodeHook``) is what the send reports,
    /// not the decode's.
    func validate(_ transport: TransportResponse, origin: ResponseOrigin, parsed: JSON? = nil, runsHooks: Bool = true) -> Outcome {
        let validation = request.validation
        let isJSON = request.responseFormat == .json
        let typed = R.Value.self != JSON.self
        // `NoContent` reads no body, so any content type will do.
        let readsBody = isJSON && !transport.data.isEmpty && R.Value.self != NoContent.self
        let contentTypes = readsBody ? validation.contentTypes ?? settings.value.acceptableContentTypes : nil
        if let failure = StatusStage.check(transport, statusCodes: validation.statusCodes ?? settings.value.acceptableStatusCodes, contentTypes: contentTypes) {
            return .failure(failure)
        }
        let shape = isJSON ? validation.shape : nil
        let hooks = runsHooks ? self.hooks : []
        var tree = isJSON ? parsed : nil
        var value: Result<R.Value, NetworkError>?
        if tree == nil, isJSON, !typed || (readsBody && (shape != nil || !hooks.isEmpty)) {
            switch DecodeStage.run(transport.data, parsed: nil, redaction: settings.value.redaction) {
            case .success(let decoded): tree = decoded
            case .failure(let error) where !typed: return .failure(error)
            case .failure:
                // Not JSON as `JSON.parse` reads it: the typed decode says why in the type's terms
                // (or, for what `JSONDecoder` accepts beyond it, decodes: the hooks then see `.null`).
                value = decoded(transport.data)
                if case .failure(let error) = value { return .failure(error) }
            }
        }
        let parts = ResponseParts(
            head: transport.head, data: transport.data, fileURL: transport.fileURL, json: tree, readsBodyAsJSON: isJSON, origin: origin, timing: transport.timing)
        let checked = ShapeStage.run(parts, of: request, shape: shape, hooks: hooks)
        guard typed, case .success(let accepted) = checked else { return checked }
        switch value ?? decoded(transport.data) {
        case .success(let decoded): return .success(accepted.with(value: decoded))
        case .failure(let error): return .failure(error)
        }
    }

    /// `data` as the request's typed value.
    private func decoded(_ data: Data) -> Result<R.Value, NetworkError> {
        DecodeStage.run(R.Value.self, from: data, decoder: settings.decoder, redaction: settings.value.redaction)
    }

    /// Whether the request's value is decoded from the body by `JSONDecoder` (its `init(from:)` is the
    /// app's code: never run on the transport's queue or the sender's thread).
    var decodesTypedValue: Bool { R.Value.self != JSON.self }

    /// A stored entry as a response to the request, checked like one from the network (the hooks too,
    /// unless `runsHooks` is false).
    func entry(_ entry: CachedEntry, origin: ResponseOrigin, runsHooks: Bool = true) -> Outcome {
        guard let transported = CacheStage.transportResponse(entry) else { return .failure(.invalidRequest(reason: "an unusable cache entry")) }
        return validate(transported, origin: origin, parsed: entry.decoded?.json, runsHooks: runsHooks)
    }
}
