// Target: the URL a send goes to: RequestBuilder.prepare (base URL + path + query parameters) and the
// URL filter chain after it (URLArgumentsFilter, then a closure filter), as a send runs them.
// Input: lines "<base>\n<path>\n<arguments>\n<parameters>": arguments are name=value pairs split at
// ';' for a URLArgumentsFilter; parameters is JSON text for the request's query parameters (ignored
// unless it parses). Missing lines: base https://api.example.com/v2, no arguments, no parameters.
// Checks: no trap; only .invalidRequest is thrown; a URL built is http(s) with a host; the filters
// keep its scheme, host, port, path and fragment, keep its query as a prefix, and add each argument
// the query lacked, once; filtering the result again changes nothing.
import Foundation

private struct Probe: Request {
    var path: String
    var parameters: JSON?
}

private let defaultBase = "https://api.example.com/v2"
/// Made once: a configuration's defaults take a while to compute.
private let baseConfiguration = Configuration()

private func prepared(_ probe: Probe, base: URL?, filters: [any URLFilter]) -> Result<URL, NetworkError> {
    var configuration = baseConfiguration
    configuration.baseURL = base
    configuration.urlFilters = filters
    do {
        let built = try RequestBuilder.prepare(probe, body: nil, configuration: ConfigurationSnapshot(configuration))
        guard let url = built.urlRequest.url else {
            expect("url", false, "a request built without a URL")
            return .failure(.invalidRequest(reason: "no URL"))
        }
        return .success(url)
    } catch {
        guard case .invalidRequest = error else {
            expect("error", false, "prepare threw \(error), not .invalidRequest")
            return .failure(error)
        }
        _ = error.description
        return .failure(error)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let lines = inputText(data, size).split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
    let base = lines.count > 1 ? URL(string: lines[0]) : URL(string: defaultBase)
    let path = lines.count > 1 ? lines[1] : (lines.first ?? "")
    var arguments: [String: String] = [:]
    if lines.count > 2 {
        for pair in lines[2].split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts.first, !name.isEmpty else { continue }
            arguments[String(name)] = parts.count > 1 ? String(parts[1]) : ""
        }
    }
    let parameters = lines.count > 3 ? try? JSON.parse(Data(lines[3].utf8)) : nil
    let probe = Probe(path: path, parameters: parameters.flatMap { if case .object = $0 { $0 } else { nil } })

    let argumentsFilter = URLArgumentsFilter(arguments)
    let identity = ClosureURLFilter { url, _ in url }
    let plain = prepared(probe, base: base, filters: [])
    let filtered = prepared(probe, base: base, filters: [argumentsFilter, identity])
    guard case .success(let before) = plain else {
        // The filters run after the URL is built: what fails without them fails with them.
        if case .success(let url) = filtered { expect("order", false, "a URL that fails to build succeeds with filters: \(url)") }
        return 0
    }
    for url in [before] + ((try? filtered.get()).map { [$0] } ?? []) {
        expect("scheme", url.scheme?.lowercased() == "http" || url.scheme?.lowercased() == "https", "built \(url.absoluteString.debugDescription)")
        expect("host", !(url.host ?? "").isEmpty, "built \(url.absoluteString.debugDescription) without a host")
    }
    // Absolute paths skip the filters, by design.
    guard !URLResolver.isAbsolute(path) else { return 0 }
    guard case .success(let after) = filtered else {
        expect("filtered", false, "\(before.absoluteString.debugDescription) failed once filtered: \(filtered)")
        return 0
    }
    let a = URLComponents(url: before, resolvingAgainstBaseURL: true)
    let b = URLComponents(url: after, resolvingAgainstBaseURL: true)
    expect(
        "kept",
        a?.scheme == b?.scheme && a?.percentEncodedHost == b?.percentEncodedHost && a?.port == b?.port
            && a?.percentEncodedPath == b?.percentEncodedPath && a?.percentEncodedFragment == b?.percentEncodedFragment,
        "the filters changed more than the query: \(before.absoluteString.debugDescription) -> \(after.absoluteString.debugDescription)")
    let query = a?.percentEncodedQuery ?? ""
    expect(
        "prefix", (b?.percentEncodedQuery ?? "").hasPrefix(query),
        "the query was not kept: \(before.absoluteString.debugDescription) -> \(after.absoluteString.debugDescription)")
    let hadNames = a?.queryItems?.map(\.name) ?? []
    let had = Set(hadNames)
    let now = b?.queryItems?.map(\.name) ?? []
    for name in arguments.keys {
        let count = now.filter { $0 == name }.count
        expect(
            "argument", had.contains(name) ? count == hadNames.filter { $0 == name }.count : count == 1,
            "argument \(name.debugDescription) appears \(count) times in \(after.absoluteString.debugDescription) (before: \(before.absoluteString.debugDescription))")
    }
    let again = (try? argumentsFilter.filter(after, for: probe)) ?? after
    expect("idempotent", again == after, "filtering again: \(after.absoluteString.debugDescription) -> \(again.absoluteString.debugDescription)")
    return 0
}
