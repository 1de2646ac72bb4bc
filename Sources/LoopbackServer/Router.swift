import Foundation

/// A route handler: gets the request, returns the response. Called on the connection's own thread.
public typealias RouteHandler = @Sendable (ServerRequest) -> ServerResponse

/// Maps method + path to handlers.
///
/// Patterns are `/`-separated segments: literals, `:name` captures, and a final `*` matching any rest
/// (including nothing). Literal-only patterns are looked up first; among matching routes of the same kind the
/// most recently added wins, so tests can override a standard route. `HEAD` falls back to `GET` routes.
struct Router: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        case rest
    }

    struct Route: Sendable {
        var method: String?
        var segments: [Segment]
        var handler: RouteHandler
    }

    /// What a lookup found.
    enum Match {
        case found(RouteHandler, parameters: [String: String])
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    /// Literal patterns by exact path, newest first.
    private var literal: [String: [Route]] = [:]
    /// Patterns with captures, newest first.
    private var patterned: [Route] = []

    mutating func add(method: String?, pattern: String, handler: @escaping RouteHandler) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part == "*" { return .rest }
            if part.hasPrefix(":") { return .parameter(String(part.dropFirst())) }
            return .literal(String(part))
        }
        let route = Route(method: method?.uppercased(), segments: segments, handler: handler)
        if segments.allSatisfy({ if case .literal = $0 { true } else { false } }) {
            literal[
                "/" + segments.map { if case let .literal(text) = $0 { text } else { "" } }.joined(separator: "/"),
                default: []
            ].insert(route, at: 0)
        } else {
            patterned.insert(route, at: 0)
        }
    }

    func match(method: String, path: String) -> Match {
        var allowed: [String] = []
        let normalized = Self.normalize(path)
        if let routes = literal[normalized] {
            if let handler = Self.pick(routes, method: method, allowed: &allowed) {
                return .found(handler, parameters: [:])
            }
        }
        let parts = Self.split(path)
        var candidates: [(Route, [String: String])] = []
        for route in patterned {
            if let parameters = Self.bind(route.segments, to: parts) { candidates.append((route, parameters)) }
        }
        for wanted in method == "HEAD" ? ["HEAD", "GET"] : [method] {
            if let hit = candidates.first(where: { $0.0.method == nil || $0.0.method == wanted }) {
                return .found(hit.0.handler, parameters: hit.1)
            }
        }
        allowed += candidates.compactMap { $0.0.method }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: Array(Set(allowed)).sorted())
    }

    private static func pick(_ routes: [Route], method: String, allowed: inout [String]) -> RouteHandler? {
        for wanted in method == "HEAD" ? ["HEAD", "GET"] : [method] {
            if let route = routes.first(where: { $0.method == nil || $0.method == wanted }) { return route.handler }
        }
        allowed += routes.compactMap(\.method)
        return nil
    }

    private static func bind(_ segments: [Segment], to parts: [Substring]) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .rest:
                parameters["*"] = parts[min(index, parts.count)...].joined(separator: "/")
                return parameters
            case let .literal(text):
                guard index < parts.count, parts[index] == text else { return nil }
            case let .parameter(name):
                guard index < parts.count, !parts[index].isEmpty else { return nil }
                parameters[name] = FormURLEncoding.percentDecode(parts[index])
            }
        }
        return parts.count == segments.count ? parameters : nil
    }

    /// Path segments without empty ones produced by the leading slash (a trailing slash is ignored).
    private static func split(_ path: some StringProtocol) -> [Substring] {
        String(path).split(separator: "/", omittingEmptySubsequences: true)
    }

    private static func normalize(_ path: String) -> String {
        if path.count > 1 && path.hasSuffix("/") { return String(path.dropLast()) }
        return path.isEmpty ? "/" : path
    }
}
