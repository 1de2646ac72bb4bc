import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

/// The URLSession transport's rewrite of a hop's fields: it makes a new request rather than let
/// FoundationNetworking copy the shared one, and the new one must be the same request but for its fields.
/// (What goes on the wire, `User-Agent`, the jar's `Cookie`, blank and framing fields, is held by the
/// transport tests: `CookieJarTests`, `aRedirectsHopsGoOutAsTheFirstDoes`, the body tests.)
@Suite struct OutgoingFieldsTests {
    /// A request with every property FoundationNetworking's copy keeps set to something other than a
    /// new request's.
    static func unusualRequest() -> URLRequest {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:9/a?b=c")!, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 7)
        request.httpMethod = "PUT"
        request.mainDocumentURL = URL(string: "http://127.0.0.1:9/main")!
        request.networkServiceType = .background
        request.allowsCellularAccess = false
        request.httpShouldHandleCookies = false
        Pipelining.set(false, on: &request)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }

    /// Every property but the fields and the body stream, as `URLRequest`'s mirror shows them (which
    /// reads the deprecated `httpShouldUsePipelining` without a warning).
    static func properties(_ request: URLRequest) -> [String] {
        Mirror(reflecting: request).children.compactMap { child in
            guard let label = child.label, label != "allHTTPHeaderFields", label != "httpBodyStream" else { return nil }
            return "\(label): \(child.value)"
        }
    }

    @Test func theNewRequestKeepsEveryPropertyButItsFields() {
        var request = Self.unusualRequest()
        request.httpBody = Data("body".utf8)
        let fields = ["Accept": "application/json", "User-Agent": "Test/1"]
        let replaced = OutgoingFields.replacingFields(of: request, with: fields)
        #expect(Self.properties(replaced) == Self.properties(request))
        #expect(replaced.allHTTPHeaderFields == fields)
        #expect(replaced.httpBody == Data("body".utf8))
        #expect(request.allHTTPHeaderFields == ["Accept": "application/json"], "the original is left as it was")
        // FoundationNetworking's own copy gives the same request.
        var copied = request
        copied.allHTTPHeaderFields = fields
        #expect(Self.properties(replaced) == Self.properties(copied))
    }

    @Test func aStreamedBodyAndAPlainGETComeAcrossToo() {
        var streamed = Self.unusualRequest()
        let stream = InputStream(data: Data("streamed".utf8))
        streamed.httpBodyStream = stream
        let replaced = OutgoingFields.replacingFields(of: streamed, with: [:])
        #expect(replaced.httpBodyStream === stream)
        #expect(replaced.httpBody == nil)
        #expect(Self.properties(replaced) == Self.properties(streamed))

        let plain = URLRequest(url: URL(string: "http://127.0.0.1:9/")!)
        let rebuilt = OutgoingFields.replacingFields(of: plain, with: ["X-A": "1"])
        #expect(rebuilt.httpMethod == "GET")
        #expect(Self.properties(rebuilt) == Self.properties(plain))
    }

    @Test func prepareChangesARequestOnlyWhenAFieldNeedsIt() {
        let outgoing = OutgoingFields(userAgent: "Test/1")
        var own = URLRequest(url: URL(string: "http://127.0.0.1:9/")!)
        own.setValue("Mine/2", forHTTPHeaderField: "user-agent")
        own.setValue("a=1", forHTTPHeaderField: "cookie")
        var prepared = own
        outgoing.prepare(&prepared, jarCookie: "jar=1")
        #expect(prepared.allHTTPHeaderFields == own.allHTTPHeaderFields, "the request's own User-Agent and Cookie win")

        var bare = Self.unusualRequest()
        bare.setValue("  ", forHTTPHeaderField: "X-Blank")
        bare.setValue("12", forHTTPHeaderField: "content-length")
        outgoing.prepare(&bare, jarCookie: "jar=1")
        #expect(bare.allHTTPHeaderFields == ["Accept": "application/json", "X-Blank": "", "User-Agent": "Test/1", "Cookie": "jar=1"])
        #expect(Self.properties(bare) == Self.properties(Self.unusualRequest()))
    }

    #if canImport(FoundationNetworking)
    /// `replacingFields` copies the properties FoundationNetworking's request stores; a property added
    /// there (a new toolchain) fails this, so that the new request can't silently drop it. The
    /// URLProtocol properties are not copied by FoundationNetworking's `mutableCopy` either.
    @Test func foundationNetworkingStoresNoPropertyTheNewRequestLeavesOut() {
        func labels(_ mirror: Mirror?) -> [String] {
            guard let mirror else { return [] }
            return mirror.children.compactMap(\.label) + labels(mirror.superclassMirror)
        }
        let stored = Set(labels(Mirror(reflecting: NSMutableURLRequest(url: URL(string: "http://127.0.0.1:9/")!))))
        #expect(
            stored == [
                "protocolProperties", "url", "mainDocumentURL", "cachePolicy", "timeoutInterval", "_httpMethod", "allHTTPHeaderFields", "_body",
                "networkServiceType", "allowsCellularAccess", "httpShouldHandleCookies", "httpShouldUsePipelining",
            ])
        // The struct itself: its storage reference and the flag that says `timeoutInterval` was
        // assigned (which no API reads: `replacingFields` assigns it; `aStandardRequestsIdleTimeout…`
        // fails if it doesn't). A stored property added to the struct changes its size.
        #expect(MemoryLayout<URLRequest>.size == MemoryLayout<AnyObject>.size + MemoryLayout<Bool>.size)
    }
    #endif
}
