import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 8 — validate shape and run the response hooks: the decoded JSON against the request's
/// ``JSONShape`` (YTKNetwork's `jsonValidator`: it needs the decoded body), then each hook's
/// ``ResponseHook/didSucceed(_:)`` (the configuration's, then the request's). A mismatch or a hook's
/// error fails the attempt: the retry decision sees it and the cache doesn't store the response.
/// ``ResponseHook/didFail(_:for:)`` maps the send's final failure, in the deliver stage.
enum ShapeStage {
    static func check(_ json: JSON, shape: JSONShape?) -> NetworkError? {
        shape?.mismatch(in: json).map(NetworkError.jsonShape)
    }

    /// `parts` as each hook accepts it, or the first hook's error.
    static func hooks<R: Request>(_ parts: ResponseParts, of request: R, _ hooks: [any ResponseHook]) -> Outcome {
        guard !hooks.isEmpty else { return .success(parts) }
        let answered = ResponseContext(request: request, parts: parts)
        do {
            for hook in hooks { try hook.didSucceed(answered) }
        } catch {
            return .failure(error)
        }
        return .success(parts)
    }
}

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

    /// Status and content type, decode, shape: the response's parts (the caller adds the request).
    func validate(_ transport: TransportResponse, origin: ResponseOrigin, parsed: JSON? = nil) -> Outcome {
        let validation = request.validation
        let isJSON = request.responseFormat == .json
        let contentTypes = isJSON && !transport.data.isEmpty ? validation.contentTypes ?? settings.value.acceptableContentTypes : nil
        if let failure = StatusStage.check(transport, statusCodes: validation.statusCodes ?? settings.value.acceptableStatusCodes, contentTypes: contentTypes) {
            return .failure(failure)
        }
        var json = JSON.null
        if isJSON {
            switch DecodeStage.run(transport.data, parsed: parsed, redaction: settings.value.redaction) {
            case .success(let decoded): json = decoded
            case .failure(let error): return .failure(error)
            }
            if let mismatch = ShapeStage.check(json, shape: validation.shape) { return .failure(mismatch) }
        }
        return .success(ResponseParts(head: transport.head, data: transport.data, fileURL: transport.fileURL, json: json, origin: origin, timing: transport.timing))
    }

    /// The hooks' verdict on a validated outcome.
    func hooked(_ outcome: Outcome) -> Outcome {
        guard !hooks.isEmpty, case .success(let parts) = outcome else { return outcome }
        return ShapeStage.hooks(parts, of: request, hooks)
    }

    /// A stored entry as a response to the request, checked like one from the network, hooks included.
    func entry(_ entry: CachedEntry, origin: ResponseOrigin) -> Outcome {
        guard let transported = CacheStage.transportResponse(entry) else { return .failure(.invalidRequest(reason: "an unusable cache entry")) }
        return hooked(validate(transported, origin: origin, parsed: entry.decoded?.json))
    }
}

extension ResponseContext {
    /// A response as hooks and monitors see it.
    init(request: any Request, parts: ResponseParts) {
        self.init(request: request, httpResponse: parts.head.response, data: parts.data, json: parts.json, httpVersion: parts.head.httpVersion)
    }
}
