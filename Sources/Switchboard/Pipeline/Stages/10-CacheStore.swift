import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 10 — cache store, once per send, on its final outcome: a success from the network (or a
/// revalidation) is stored under the key of the request that got it, unless it says `no-store` or
/// `Vary: *`, without its `Set-Cookie`; under ``CachePolicy/Mode/networkElseCache`` a failure of the
/// network (not a bad answer from the server) is answered by the stored entry, checked again
/// (``Response/Source/stale``). A cancelled send skips this stage.
enum CacheStoreStage {
    static func run<R: Request>(_ outcome: Outcome, context: CacheContext?, check: ResponseCheck<R>) -> Outcome {
        guard let context else { return outcome }
        switch outcome {
        case .success(let response) where response.origin == .network || response.origin == .revalidated:
            CacheStage.store(response, context)
        case .failure(let error) where context.policy.mode == .networkElseCache && CacheStage.isNetworkFailure(error):
            if let entry = context.stored, case .success(let stale) = check.entry(entry, origin: .stale) { return .success(stale) }
        default:
            break
        }
        return outcome
    }
}
