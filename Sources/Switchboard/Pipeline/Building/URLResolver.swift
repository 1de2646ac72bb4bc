import Foundation

/// Joins a base URL and a request path.
enum URLResolver {
    /// The URL for `path`: used as is when it is absolute, otherwise appended to `base`'s own path
    /// (`https://h/v2` + `users/1` or `/users/1` → `https://h/v2/users/1`). A query in `path` is appended
    /// to any query of `base`.
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` for a relative path without a base URL, an
    ///   unsupported scheme, a URL without a host, or characters that cannot form a URL.
    /// - Parameter join: `base` prepared for the fast join, when the caller has it (the configuration's).
    static func resolve(path: String, base: URL?, join: JoinBase? = nil) throws(NetworkError) -> URL {
        if isAbsolute(path) {
            guard let absolute = absoluteURL(path) else {
                throw .invalidRequest(reason: "\(shown(path)) is not a valid URL")
            }
            try check(absolute)
            return absolute
        }
        if path.utf8.first != UInt8(ascii: "/"), let scheme = scheme(of: path) {
            throw .invalidRequest(reason: "path \(shown(path)) has the scheme \(scheme.debugDescription); only http and https can be sent")
        }
        guard let base else {
            throw .invalidRequest(reason: "relative path \(shown(path)) but no base URL (set Configuration.baseURL or the request's baseURL)")
        }
        if let join = join ?? JoinBase(base), let fast = simpleJoin(path: path, base: join) { return fast }
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else {
            throw .invalidRequest(reason: "invalid base URL \(shown(base.absoluteString))")
        }
        let (pathPart, queryPart) = split(path)
        guard let encodedPath = pathPart.addingPercentEncoding(withAllowedCharacters: pathAllowed).map(escapingLonePercents) else {
            throw .invalidRequest(reason: "path \(shown(path)) is not valid UTF-8")
        }
        var basePath = components.percentEncodedPath
        while basePath.hasSuffix("/") { basePath.removeLast() }
        var relative = Substring(encodedPath)
        while relative.hasPrefix("/") { relative.removeFirst() }
        components.percentEncodedPath = relative.isEmpty && !pathPart.hasSuffix("/") ? (basePath.isEmpty ? "/" : basePath) : basePath + "/" + relative
        if let queryPart {
            guard let encodedQuery = queryPart.addingPercentEncoding(withAllowedCharacters: queryAllowed).map(escapingLonePercents) else {
                throw .invalidRequest(reason: "query of \(shown(path)) is not valid UTF-8")
            }
            let existing = components.percentEncodedQuery ?? ""
            components.percentEncodedQuery = existing.isEmpty ? encodedQuery : existing + "&" + encodedQuery
        }
        guard let url = components.url else {
            throw .invalidRequest(reason: "cannot form a URL from base \(shown(base.absoluteString)) and path \(shown(path))")
        }
        try check(url)
        return url
    }

    /// A base URL ready for the fast join: an http(s) URL with a host and no query or fragment, as text
    /// without its trailing slashes. Made once per configuration for its base and CDN URLs.
    struct JoinBase: Sendable {
        let prefix: String
        let hasPath: Bool
        /// The URLs joined so far, by path, for a configuration's base URL: parsing a URL is most of the
        /// cost of a join on Linux, and an app sends the same few paths again and again.
        let recent: RecentURLs?

        init?(_ base: URL, remembering: Bool = false) {
            var text = base.absoluteString
            guard !text.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }),
                let scheme = base.scheme?.lowercased(), scheme == "http" || scheme == "https", base.host?.isEmpty == false,
                portProblem(base) == nil  // else the slow join, which refuses it
            else { return nil }
            while text.hasSuffix("/") { text.removeLast() }
            prefix = text
            hasPath = base.path.count > 1
            recent = remembering ? RecentURLs() : nil
        }
    }

    /// The common case without URLComponents (slow on Linux): a base URL with no query or fragment and
    /// a path of plain URL characters (letters, digits, `-._~/`, no `%`, `?` or `#`). `nil` otherwise.
    private static func simpleJoin(path: String, base: JoinBase) -> URL? {
        if let known = base.recent?.url(for: path) { return known }
        // A query of plain characters (none that percent-encoding would change) may come along.
        var pathPart = Substring(path)
        var query: Substring?
        if let mark = path.firstIndex(of: "?") {
            pathPart = path[..<mark]
            query = path[path.index(after: mark)...]
        }
        guard pathPart.utf8.allSatisfy(isPlainPathByte), query?.utf8.allSatisfy(isPlainQueryByte) ?? true else { return nil }
        var relative = pathPart
        while relative.hasPrefix("/") { relative.removeFirst() }
        let joined: URL?
        if relative.isEmpty {
            guard query == nil else { return nil }
            // The base URL itself; keep a trailing slash the path asked for, or "/" for a bare host.
            joined = URL(string: base.prefix + (path.hasSuffix("/") || !base.hasPath ? "/" : ""))
        } else {
            joined = URL(string: base.prefix + "/" + relative + (query.map { "?" + $0 } ?? ""))
        }
        if let joined { base.recent?.remember(joined, for: path) }
        return joined
    }

    /// A small, bounded memory of joined URLs by path (emptied when full, so paths with ids in them
    /// cost at most what they cost without it).
    final class RecentURLs: Sendable {
        /// Locked: senders build URLs on any thread.
        private let urls = Locked<[String: URL]>([:])
        static let capacity = 64

        func url(for path: String) -> URL? {
            urls.withLock { $0[path] }
        }

        func remember(_ url: URL, for path: String) {
            urls.withLock { urls in
                if urls.count >= Self.capacity { urls.removeAll(keepingCapacity: true) }
                urls[path] = url
            }
        }
    }

    private static func isPlainPathByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
            true
        default:
            false
        }
    }

    /// A byte a query keeps as it is: plain path bytes and the query's own punctuation (all of
    /// `urlQueryAllowed`, so encoding would leave the query unchanged); not `%` or `#`.
    private static func isPlainQueryByte(_ byte: UInt8) -> Bool {
        isPlainPathByte(byte) || "=&?:@!$'()*+,;".utf8.contains(byte)
    }

    /// The scheme `path` starts with (`file`, `ftp`, `data`…), per RFC 3986: a letter, then letters,
    /// digits, `+`, `-` or `.`, then `:`. (A relative path can't have a colon in its first segment.)
    static func scheme(of path: String) -> String? {
        guard let colon = path.firstIndex(of: ":") else { return nil }
        let candidate = path[..<colon]
        guard let first = candidate.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first) else { return nil }
        let allowed = candidate.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "+-.".unicodeScalars.contains($0)) }
        return allowed ? String(candidate) : nil
    }

    /// Whether `path` is an absolute http(s) URL, used as is.
    static func isAbsolute(_ path: String) -> Bool {
        let lower = path.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// `path` as a URL when it has an http(s) scheme (`http://`, `https://`).
    private static func absoluteURL(_ path: String) -> URL? {
        guard isAbsolute(path) else { return nil }
        return URL(string: path) ?? path.addingPercentEncoding(withAllowedCharacters: absoluteAllowed).flatMap(URL.init(string:))
    }

    /// Rejects what URLSession could not send.
    static func check(_ url: URL) throws(NetworkError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .invalidRequest(reason: "unsupported URL scheme in \(shown(url.absoluteString)); use http or https")
        }
        guard let host = url.host, !host.isEmpty else {
            throw .invalidRequest(reason: "URL \(shown(url.absoluteString)) has no host")
        }
        if let problem = portProblem(url) { throw .invalidRequest(reason: problem) }
    }

    /// Why `url`'s port can't be connected to (outside 1–65535), or `nil`.
    static func portProblem(_ url: URL) -> String? {
        guard let port = url.port, !(1...65535).contains(port) else { return nil }
        return "URL \(shown(url.absoluteString)) has port \(port), outside 1–65535"
    }

    /// A path or URL as an error message may show it: quoted, with user info and secret query items
    /// redacted (error messages end up in logs).
    static func shown(_ text: String) -> String {
        Redaction.standard.redact(urlText: text).debugDescription
    }

    /// Escapes a `%` that doesn't start a `%XX` escape as `%25`, so the text is valid percent-encoding.
    static func escapingLonePercents(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        for (i, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: "%"), !(i + 2 < bytes.count && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
                out.append(contentsOf: "%25".utf8)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
    }

    private static func split(_ path: String) -> (String, String?) {
        guard let mark = path.firstIndex(of: "?") else { return (path, nil) }
        return (String(path[..<mark]), String(path[path.index(after: mark)...]))
    }

    /// Path characters kept as they are; `%` too, so an already-escaped path is not escaped twice.
    private static let pathAllowed = CharacterSet.urlPathAllowed.union(CharacterSet(charactersIn: "%"))
    private static let queryAllowed = CharacterSet.urlQueryAllowed.union(CharacterSet(charactersIn: "%"))
    private static let absoluteAllowed = CharacterSet.urlQueryAllowed.union(.urlPathAllowed).union(CharacterSet(charactersIn: "%#:"))
}
