import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the URLSession transport keeps its cookie jar (``Configuration/cookies``), by the libcurl
/// transport's rules (`CurlTransfer`'s header list and `storeCookies`):
/// - each response head the delegate is shown (a redirect's, a 401's, the final one, a 3xx without a
///   `Location`) stores the cookies it sets, each `Set-Cookie` line on its own, the field's name in
///   any case; a head whose framing is broken stores none;
/// - each hop carries the jar's cookies for its URL, unless it has a `Cookie` of its own (the app's,
///   which a redirect to another origin drops);
/// - a request whose `httpShouldHandleCookies` is `false` neither stores nor carries them.
///
/// One exception, FoundationNetworking's: when a task answers a challenge it sends its first request
/// again, with the `Cookie` it started with, so a cookie the 401 set goes from the next request on.
///
/// On Linux the delegate does all of it, and the session has no jar: FoundationNetworking would parse
/// every line of every response head as a possible `Set-Cookie` as it arrives (about 23 µs a request
/// at c=8 on this project's bench machine, docs/perf-log.md), miss a `set-cookie` in lower case,
/// replace a request's own `Cookie`, and ignore `httpShouldHandleCookies`. On Apple platforms the
/// system keeps the jar (this path is not built here); the delegate only stores a redirect's cookies
/// and puts them on the next hop, which the system would not.
struct SessionCookies: Sendable {
    /// The jar, `nil` with ``CookiePolicy/none``.
    let jar: HTTPCookieStorage?

    /// Whether the delegate keeps the jar on every hop (Linux), rather than the system.
    static var keptByDelegate: Bool {
        #if canImport(FoundationNetworking)
        true
        #else
        false
        #endif
    }

    /// Stores the cookies `response` (to `request`, the hop that was sent) sets.
    func store(from response: HTTPURLResponse, for request: URLRequest) {
        // One lookup: `HTTPURLResponse` names every spelling of a field one way. Reading
        // `allHeaderFields` instead bridged every field, most of about 4.7 µs a response (perf, c=64).
        guard let jar, let joined = response.value(forHTTPHeaderField: "Set-Cookie"), request.httpShouldHandleCookies, let url = response.url else { return }
        // Each line parsed alone, as libcurl's transport does: parsed whole, a line that is not a
        // cookie would run into the one before it.
        let cookies = Self.lines(joined).flatMap { HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": $0], for: url) }
        if !cookies.isEmpty { jar.setCookies(cookies, for: url, mainDocumentURL: nil) }
    }

    /// The `Set-Cookie` lines that FoundationNetworking joined into one value with ", ": split at
    /// each ", " except inside an `Expires` date, where a day's name is followed by a comma and the
    /// day of the month (`Expires=Wed, 21 Oct 2099 07:28:00 GMT`, `expires = Wednesday, 21-Oct-99`).
    /// (A line that itself held ", " elsewhere, not allowed in a cookie, is split too.) Linear in the
    /// value's length, whatever a server sends.
    static func lines(_ joined: String) -> [String] {
        var lines: [String] = []
        var continues = false
        for part in joined.components(separatedBy: ", ") {
            if continues, part.first?.isASCII == true, part.first?.isNumber == true {
                lines[lines.count - 1] += ", "
                lines[lines.count - 1] += part
                // The date goes on in this part: a day's name can't start a new one.
                continues = false
            } else {
                lines.append(part)
                continues = endsInADayName(part)
            }
        }
        return lines
    }

    /// Whether `line`'s last attribute is `Expires` set to a day's name (`Wed`, `Wednesday`), with
    /// spaces allowed around `=`: a date that may go on after a comma.
    private static func endsInADayName(_ line: String) -> Bool {
        let attribute = line.lastIndex(of: ";").map { line[line.index(after: $0)...] } ?? line[...]
        guard let equals = attribute.firstIndex(of: "=") else { return false }
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        let name = attribute[..<equals].drop(while: isSpace).reversed().drop(while: isSpace)
        guard name.count == 7, String(name.reversed()).lowercased() == "expires" else { return false }
        let day = attribute[attribute.index(after: equals)...].drop(while: isSpace).reversed().drop(while: isSpace)
        return (3...9).contains(day.count) && day.allSatisfy { $0.isASCII && $0.isLetter }
    }

    /// The `Cookie` value the jar has for `request`, or `nil` for none (no jar, no cookies for its URL,
    /// or a request that doesn't handle cookies); a cookie with a control character is left out,
    /// and the rest of RFC 6265 applied (``TransportCookies/field(from:for:now:)``).
    func field(for request: URLRequest) -> String? {
        guard let jar, request.httpShouldHandleCookies, let url = request.url else { return nil }
        return TransportCookies.field(from: jar, for: url)
    }
}
