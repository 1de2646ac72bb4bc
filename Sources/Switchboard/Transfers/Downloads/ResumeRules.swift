import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a download may keep to resume from and what it does with each final head (RFC 9110 §13.1.5
/// `If-Range`, §14 range requests): bytes are appended only to the version they came from, at the
/// offset where the partial file ends, up to the length the server named; anything else starts over.
enum ResumeRules {
    /// What a download does with a final response head.
    enum Verdict: Equatable {
        /// A `206` that continues the partial file up to `total` bytes.
        case append(total: Int64)
        /// The whole body from byte 0 (a `200`, or a `206` of the whole file); `total` when known.
        case whole(total: Int64?)
        /// A `416` that says the partial file of `length` bytes is the whole file.
        case alreadyWhole(length: Int64)
        /// Nothing of it can be used: discard the partial file and ask again from byte 0.
        case restart(reason: String)
        /// A failure status: the download fails with it, the partial file is kept.
        case failure
    }

    /// The verdict on `head`, for a request that asked for the bytes from `requested` on (0: no `Range`)
    /// with `sent`'s validator in `If-Range`. `ownRange`: the app set a `Range` of its own (nothing is
    /// resumed then, a `206` is taken as it comes, and a `416` is a failure status).
    static func verdict(_ head: HTTPURLResponse, requested: Int64, sent: PartialDownload.Record?, ownRange: Bool, method: String?) -> Verdict {
        switch head.statusCode {
        case 206:
            if ownRange { return .whole(total: nil) }
            guard let range = contentRange(of: head), let start = range.start, let end = range.end else {
                return .restart(reason: "a 206 without a usable Content-Range")
            }
            guard let total = range.total else { return .restart(reason: "a 206 of an unknown complete length (/*)") }
            guard isIdentity(head) else { return .restart(reason: "a 206 with a Content-Encoding") }
            if let recorded = sent?.totalLength, recorded != total {
                return .restart(reason: "a 206 naming a complete length of \(total) bytes, not \(recorded)")
            }
            guard start == requested, end == total - 1 else {
                return .restart(reason: "a 206 for bytes \(start)-\(end)/\(total), not from byte \(requested) to the end")
            }
            guard let sent else {
                return requested == 0 ? .whole(total: total) : .restart(reason: "a 206 to a request without If-Range")
            }
            guard validator(of: head, kind: sent.kind) == sent.validator else {
                return .restart(reason: "a 206 whose \(sent.kind == .etag ? "ETag" : "Last-Modified") is not the one sent in If-Range")
            }
            return .append(total: total)
        case 200..<300:
            let total = isIdentity(head) ? TransferRules.expectedBodyLength(head, method: method) : nil
            return .whole(total: total)
        case 416:
            // The answer to the app's own `Range`: its failure, not a resume's.
            if ownRange { return .failure }
            guard requested > 0, let sent, let total = contentRange(of: head)?.total, total == requested, sent.totalLength == total else {
                return .restart(reason: "a 416 that doesn't say the partial file is the whole file")
            }
            // Only the version If-Range named can be complete: a 416 that doesn't repeat its validator
            // (another one, or none) may be about another version of the same length.
            guard validator(of: head, kind: sent.kind) == sent.validator else {
                return .restart(reason: "a 416 without the \(sent.kind == .etag ? "ETag" : "Last-Modified") sent in If-Range")
            }
            return .alreadyWhole(length: total)
        default:
            return .failure
        }
    }

    /// What a response's bytes can be resumed with later: a strong `ETag`, or without one a
    /// `Last-Modified` at least 60 s older than the response's `Date`; `nil` (nothing to resume with)
    /// for any other response, or one with a `Content-Encoding` (its offsets aren't the file's).
    static func resumeValidator(of head: HTTPURLResponse) -> (validator: String, kind: PartialDownload.ValidatorKind)? {
        guard isIdentity(head) else { return nil }
        if let tag = head.value(forHTTPHeaderField: "ETag"), !tag.isEmpty {
            // A weak tag can't be used for a range (RFC 9110 §13.1.5), and hides no Last-Modified.
            return tag.hasPrefix("W/") ? nil : (tag, .etag)
        }
        guard let modified = head.value(forHTTPHeaderField: "Last-Modified"), let modifiedDate = httpDate(modified),
            let sentAt = head.value(forHTTPHeaderField: "Date").flatMap(httpDate), sentAt.timeIntervalSince(modifiedDate) >= 60
        else { return nil }
        return (modified, .lastModified)
    }

    /// The validator of `kind` in `head`.
    private static func validator(of head: HTTPURLResponse, kind: PartialDownload.ValidatorKind) -> String? {
        head.value(forHTTPHeaderField: kind == .etag ? "ETag" : "Last-Modified")
    }

    /// Whether the body has no `Content-Encoding` (or `identity`).
    private static func isIdentity(_ head: HTTPURLResponse) -> Bool {
        let encoding = head.value(forHTTPHeaderField: "Content-Encoding")?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return encoding.isEmpty || encoding == "identity"
    }

    /// `Content-Range: bytes start-end/total` (`total` may be `*`), or `bytes */total` (a 416).
    static func contentRange(of head: HTTPURLResponse) -> (start: Int64?, end: Int64?, total: Int64?)? {
        guard let value = head.value(forHTTPHeaderField: "Content-Range")?.trimmingCharacters(in: .whitespaces),
            value.lowercased().hasPrefix("bytes ")
        else { return nil }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1).map(String.init)
        guard halves.count == 2 else { return nil }
        let total = halves[1] == "*" ? nil : Int64(halves[1])
        if halves[1] != "*", total == nil { return nil }
        if halves[0] == "*" { return (nil, nil, total) }
        let bounds = halves[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start <= end else { return nil }
        return (start, end, total)
    }

    /// An HTTP date (IMF-fixdate, or the obsolete RFC 850 and asctime forms), or `nil`.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text.trimmingCharacters(in: .whitespaces)) { return date }
        }
        return nil
    }
}
