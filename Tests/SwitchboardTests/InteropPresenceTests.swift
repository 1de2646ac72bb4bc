import Foundation
import Testing

/// The interop suites skip themselves without their servers (a plain `swift test` on a fresh
/// machine). Where the servers are required (`.ci/run` sets `SWITCHBOARD_REQUIRE_INTEROP=1`), a
/// missing one is a failure here, so a suite that README.md or RELIABILITY.md counts never skips there.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["SWITCHBOARD_REQUIRE_INTEROP"] != nil, "the interop servers are required only with SWITCHBOARD_REQUIRE_INTEROP=1"))
struct InteropPresenceTests {
    @Test func everyInteropServerIsThereWhereTheyAreRequired() {
        #expect(httpbinURL != nil, "HTTPBIN_URL is not set: the httpbin interop suites would be skipped")
        #expect(httpsURL != nil, "HTTPS_URL is not set: the TLS interop suite would be skipped")
        #expect(httpsCAFile != nil, "HTTPS_CA_FILE is not set: the TLS interop suite can't trust its server")
        #expect(TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? ""): the trust-policy suites would be skipped")
        #expect(TLSLab.systemStoreUnavailable == nil, "\(TLSLab.systemStoreUnavailable ?? ""): the system-store trust test would be skipped")
    }
}
