import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 8 — validate shape and run the response hooks: the decoded JSON against the request's
/// ``JSONShape`` (YTKNetwork's `jsonValidator`: it needs the decoded body), then each hook's
/// ``ResponseHook/didSucceed(_:)`` (the configuration's, then the request's). A mismatch or a hook's
/// error fails the attempt: the retry decision sees it and the cache doesn't store the response. A
/// stored response meets the hooks only when it answers (stage 3 passes none otherwise).
/// ``ResponseHook/didFail(_:for:)`` maps the send's final failure, in the deliver stage.
enum ShapeStage {
    static func run<R: Request>(_ parts: ResponseParts, of request: R, shape: JSONShape?, hooks: [any ResponseHook]) -> Outcome {
        if let mismatch = shape?.mismatch(in: parts.json) { return .failure(.jsonShape(mismatch)) }
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
