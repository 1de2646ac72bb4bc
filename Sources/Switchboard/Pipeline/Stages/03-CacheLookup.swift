import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 3 — cache lookup, keyed on the request that goes on the wire (after authentication): the
/// method, the final URL without volatile parameters, the body's digest, the sensitive data and the
/// digest of every credential it carries (none of them cacheable without the policy's opt-in).
///
/// The memory tier answers at once; otherwise the file is read and checked on the cache's queue. An
/// entry stored for another version is removed; one whose `Vary` fields differ is a miss. A usable
/// entry is checked like a response from the network (stages 6 to 8; the hooks only when it answers).
/// Under cache-else-load a fresh entry answers without the network; otherwise the entry may make the
/// request conditional and is the offline fallback (stage 10).
enum CacheLookupStage {
    /// What a lookup found for one attempt.
    struct Found: Sendable {
        /// What the attempt does with the cache from here (`nil` for a fresh answer, or credentials
        /// the policy doesn't let the cache see).
        let context: CacheContext?
        /// The stored response when it answers (fresh, or cached-then-load's early answer), checked and
        /// accepted by the hooks.
        let stored: ResponseParts?
        /// Whether `stored` answers the send without the network.
        let fresh: Bool
    }

    /// What the lookup found: at once from memory (or when no entry is possible), later when the disk
    /// must be read (on the cache's queue). `fromParts`: key it from what the builder recorded (nothing
    /// adapted the request), which is cheaper than reading the `URLRequest` back. After a disk read,
    /// before the hooks, `watch` is asked whether `attempt` still looks up: an attempt that ended
    /// meanwhile (a cancel, its deadline) doesn't run them on an entry that can't answer it.
    static func run<R: Request>(
        _ urlRequest: URLRequest, prepared: RequestBuilder.Prepared, setting: CacheSetting, fromParts: Bool, check: ResponseCheck<R>,
        watch: some LookupWatch, attempt: Int
    ) -> Step<Found> {
        guard let key = key(urlRequest, prepared, setting, fromParts) else {
            // Credentials the policy doesn't let the cache see: neither served nor stored.
            return .now(Found(context: nil, stored: nil, fresh: false))
        }
        guard !setting.policy.ignoresCache else {
            return .now(Found(context: CacheContext(setting: setting, key: key, request: urlRequest, stored: nil), stored: nil, fresh: false))
        }
        switch setting.cache.lookUp(key) {
        case .now(let entry?) where check.decodesTypedValue:
            // A typed value's decode is the app's code: not on the sender's thread (the main thread, often).
            return .later {
                guard watch.isLookingUp(attempt) else { return Found(context: nil, stored: nil, fresh: false) }
                return found(entry, key: key, urlRequest, setting, check)
            }
        case .now(let entry):
            return .now(found(entry, key: key, urlRequest, setting, check))
        case .onDisk(let generation):
            return .later {
                let entry = await setting.cache.read(key, generation: generation)
                guard watch.isLookingUp(attempt) else { return Found(context: nil, stored: nil, fresh: false) }
                return found(entry, key: key, urlRequest, setting, check)
            }
        }
    }

    private static func key(_ urlRequest: URLRequest, _ prepared: RequestBuilder.Prepared, _ setting: CacheSetting, _ fromParts: Bool) -> String? {
        if fromParts, let parts = prepared.parts {
            return CacheKey.make(for: parts, headers: prepared.mayCarryCredentialHeaders ? urlRequest.allHTTPHeaderFields : nil, setting)
        }
        return CacheKey.make(for: urlRequest, setting)
    }

    /// What `found` means for the send. The entry is checked like a response from the network (stages 6
    /// to 8); the hooks see it only when it answers — a fresh entry under cache-else-load, or the early
    /// answer of cached-then-load — so a hook runs once per answer. An entry a hook rejects is a miss:
    /// neither an answer, nor a validator, nor the fallback. (An entry kept only for a conditional request
    /// or as the offline fallback meets the hooks when it answers: as a 304's body in stage 8, as the
    /// fallback in stage 10.)
    private static func found<R: Request>(_ found: CachedEntry?, key: String, _ urlRequest: URLRequest, _ setting: CacheSetting, _ check: ResponseCheck<R>) -> Found {
        var entry = CacheStage.usable(found, key: key, for: urlRequest, setting)
        var stored: ResponseParts?
        var fresh = false
        if let usable = entry {
            fresh = setting.policy.mode == .cacheElseLoad && usable.isFresh(at: Date())
            let answers = fresh || setting.policy.mode == .cachedThenLoad
            if case .success(let parts) = check.entry(usable, origin: .cache, runsHooks: answers) {
                // Parsed here, off the sender's thread: a later hit from memory won't parse it again.
                if usable.decoded == nil, let tree = parts.parsed { setting.cache.rememberDecoded(usable, head: parts.head.response, json: tree) }
                if answers { stored = parts }
            } else {
                (entry, fresh) = (nil, false)
            }
        }
        // A fresh answer ends the send: nothing after reads a context, so none is made for it.
        return Found(context: fresh ? nil : CacheContext(setting: setting, key: key, request: urlRequest, stored: entry), stored: stored, fresh: fresh)
    }

}

/// Whether an attempt still waits for its cache lookup (a disk read that comes back after the attempt
/// ended is dropped). The send's state answers; a protocol, not a closure, so that a lookup answered
/// from memory allocates nothing for it.
protocol LookupWatch: Sendable {
    func isLookingUp(_ attempt: Int) -> Bool
}

extension Locked: LookupWatch where State == OperationState {
    func isLookingUp(_ attempt: Int) -> Bool { withLock { $0.isLookingUp(attempt) } }
}
