import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

/// Proxies on the libcurl transport, against the tests' own proxy on 127.0.0.1: http forwarded,
/// https tunnelled, credentials sent and never logged, bypasses, a dead proxy; and the URLSession
/// transport refusing what it can't apply.
@Suite(TransportUnderTest.curlOnly, .enabled(if: TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? "")"), hangGuard, admission)
struct ProxyTests {
    func client(_ server: LoopbackServer, _ proxy: ProxySetting, logger: CapturingLogger? = nil) -> Dispatcher {
        makeClient(server) {
            $0.transport = .curl
            $0.proxy = proxy
            if let logger {
                $0.logMode = .debug
                $0.logger = logger
            }
        }
    }

    /// On URLSession, FoundationNetworking doesn't say which protocol carried a response.
    @Test func theURLSessionTransportDoesNotSayTheProtocol() async throws {
        try await withServer { server in
            let response = try await makeClient(server) { $0.transport = .urlSession }.response(for: Get("/echo"))
            #expect(response.httpVersion == nil)
        }
    }

    @Test func anHTTPRequestGoesThroughTheProxy() async throws {
        let proxy = try await TestProxy.start()
        defer { proxy.stop() }
        try await withServer { server in
            let response = try await client(server, proxy.setting()).response(for: Get("/echo?via=proxy"))
            #expect(response.json["query"].string == "via=proxy")
            #expect(response.httpVersion == "HTTP/1.1")
            let seen = try await proxy.seen()
            #expect(seen == [TestProxy.Seen(method: "GET", target: "\(server.baseURL.absoluteString)/echo?via=proxy", proxyAuthorization: nil)])
            #expect(server.hits("/echo") == 1)
        }
    }

    @Test func anHTTPSRequestTunnelsThroughTheProxyWithCONNECT() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        let proxy = try await TestProxy.start()
        defer { proxy.stop() }
        try await withServer { server in
            let dispatcher = makeClient(server) {
                $0.transport = .curl
                $0.proxy = proxy.setting()
                $0.serverTrust = ServerTrust(defaultPolicy: .onlyCAs([try! lab.caA.trustCertificate()]))
            }
            let response = try await dispatcher.response(for: Get(servers.url(0).absoluteString))
            #expect(response.json["ok"] == true)
            // The proxy saw the tunnel, not the request inside it (TLS end to end).
            #expect(try await proxy.seen() == [TestProxy.Seen(method: "CONNECT", target: "localhost:\(servers.ports[0])", proxyAuthorization: nil)])
            // The server's certificate is still judged by the trust policy through the tunnel.
            let untrusted = makeClient(server) {
                $0.transport = .curl; $0.proxy = proxy.setting()
            }
            do {
                _ = try await untrusted.response(for: Get(servers.url(0).absoluteString))
                Issue.record("a server from a private CA was trusted through the tunnel")
            } catch NetworkError.serverTrustFailed(let failure) {
                #expect(failure.check == .chain)
            }
        }
    }

    @Test func proxyCredentialsAreSentAndNeverLogged() async throws {
        let credentials = Credentials(user: "proxyuser", password: "pr0xy-s3cret")
        let proxy = try await TestProxy.start(credentials: credentials)
        defer { proxy.stop() }
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        try await withServer { server in
            let logger = CapturingLogger()
            let dispatcher = client(server, proxy.setting(credentials: credentials), logger: logger)
            let response = try await dispatcher.response(for: Get("/echo"))
            #expect(response.statusCode == 200)
            let basic = "Basic " + Data("proxyuser:pr0xy-s3cret".utf8).base64EncodedString()
            #expect(try await proxy.seen().map(\.proxyAuthorization) == [basic])
            // Inside a tunnel the server gets the request alone, not the proxy's credentials.
            let tunnelled = makeClient(server) {
                $0.transport = .curl
                $0.proxy = proxy.setting(credentials: credentials)
                $0.serverTrust = ServerTrust(defaultPolicy: .onlyCAs([try! lab.caA.trustCertificate()]))
            }
            let inner = try await tunnelled.response(for: Get(servers.url(0).absoluteString))
            #expect(inner.json["ok"] == true && inner.json["headers"]["Host"] != nil)
            #expect(inner.json["headers"]["Proxy-Authorization"] == nil, "\(inner.json["headers"])")
            #expect(try await proxy.seen().last == TestProxy.Seen(method: "CONNECT", target: "localhost:\(servers.ports[0])", proxyAuthorization: basic))
            var dumped = ""
            dump(dispatcher.configuration, to: &dumped)
            #expect(!dumped.contains("pr0xy-s3cret"), "dump shows the proxy password")
            var dumpedProxy = ""
            dump(HTTPProxy(host: "127.0.0.1", port: proxy.port, credentials: credentials), to: &dumpedProxy)
            let everything =
                logger.text + "\(HTTPProxy(host: "127.0.0.1", port: proxy.port, credentials: credentials))" + "\(proxy.setting(credentials: credentials))" + dumpedProxy
            #expect(!everything.contains("pr0xy-s3cret") && !everything.contains(basic.dropFirst(6)), "a proxy password was logged or shown")

            // Without them (or wrong ones): the proxy's 407 is a proxy failure, for http and for a tunnel.
            for setting in [proxy.setting(), proxy.setting(credentials: Credentials(user: "proxyuser", password: "wrong"))] {
                for url in [server.url("/echo"), servers.url(0)] {
                    do {
                        _ = try await client(server, setting).response(for: Get(url.absoluteString))
                        Issue.record("\(url) went through a proxy that wanted credentials")
                    } catch NetworkError.proxyFailed(let reason) {
                        #expect(reason.contains("407") && reason.contains("127.0.0.1:\(proxy.port)"), "\(reason)")
                        #expect(!reason.contains("wrong"))
                    }
                }
            }
        }
    }

    @Test func aBypassedHostGoesStraight() async throws {
        let proxy = try await TestProxy.start()
        defer { proxy.stop() }
        try await withServer { server in
            for bypass in [["127.0.0.1"], ["*"], ["localhost", " 127.0.0.1 "]] {
                let response = try await client(server, proxy.setting(bypass: bypass)).response(for: Get("/echo"))
                #expect(response.statusCode == 200)
            }
            #expect(try await proxy.seen() == [])
            #expect(server.hits("/echo") == 3)
        }
    }

    /// A transport given to the dispatcher that doesn't apply its proxy setting sends nothing.
    @Test func aGivenTransportWithoutTheProxySettingSendsNothing() async throws {
        let proxy = try await TestProxy.start()
        defer { proxy.stop() }
        try await withServer { server in
            var configuration = Configuration {
                $0.baseURL = server.baseURL
                $0.callbackQueue = .immediate
                $0.proxy = proxy.setting()
            }
            let given = try CurlTransport(configuration: Configuration())  // made without the proxy
            configuration.transport = .using(given)
            do {
                _ = try await Dispatcher(configuration: configuration).response(for: Get("/echo"))
                Issue.record("a send went straight past the proxy asked for")
            } catch NetworkError.proxyFailed(let reason) {
                #expect(reason.contains("doesn't apply"))
            }
            #expect(server.totalRequests == 0)
            #expect(try await proxy.seen().isEmpty)
        }
    }

    @Test func aDeadProxyIsATypedError() async throws {
        let refusing = try RefusingPort()
        try await withServer { server in
            let dead = ProxySetting.http(HTTPProxy(host: "127.0.0.1", port: Int(refusing.port)))
            do {
                _ = try await client(server, dead).response(for: Get("/echo"))
                Issue.record("a send through a dead proxy succeeded")
            } catch NetworkError.proxyFailed(let reason) {
                #expect(reason.contains("127.0.0.1:\(refusing.port)"), "\(reason)")
            }
            #expect(server.hits("/echo") == 0, "nothing went straight instead")
        }
    }
}

/// The environment's variables, as the libcurl transport reads them in a process of its own (the
/// probe, with an environment the test sets): `http_proxy` is used, `HTTP_PROXY` never, `no_proxy`
/// bypasses, libcurl reads nothing on its own.
@Suite(TransportUnderTest.curlOnly, .enabled(if: TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? "")"), hangGuard, admission)
struct ProxyEnvironmentProcessTests {
    /// The probe's answer; run on a thread of its own (``offPool(_:)``), not on a task's.
    func probe(_ url: URL, environment: [String: String], proxy: String = "environment") async throws -> String {
        let probe = try #require(ChildProcessFaultTests.probe, "switchboard-probe is not built beside the tests")
        // Only what the probe needs: no proxy variable of the test run's own.
        let base = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "SWIFT_BACKTRACE": "enable=no"]
        let text = try await offPool { try ChildProcess.run(probe.path, ["curl", url.absoluteString, proxy], environment: base.merging(environment) { $1 }).output }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func httpProxyIsUsedUpperCaseHTTPProxyNeverAndNoProxyBypasses() async throws {
        let proxy = try await TestProxy.start()
        defer { proxy.stop() }
        try await withServer { server in
            let address = "http://127.0.0.1:\(proxy.port)"
            let url = server.url("/echo")
            #expect(try await probe(url, environment: ["HTTP_PROXY": address]) == "succeeded 200")
            #expect(try await proxy.seen().isEmpty, "HTTP_PROXY was used (httpoxy)")
            #expect(try await probe(url, environment: ["http_proxy": address, "no_proxy": "127.0.0.1"]) == "succeeded 200")
            #expect(try await proxy.seen().isEmpty, "no_proxy was not honoured")
            #expect(try await probe(url, environment: ["http_proxy": address]) == "succeeded 200")
            #expect(try await proxy.seen().map(\.target) == [url.absoluteString])
            // An explicit proxy whatever no_proxy says (libcurl would read it on its own); none whatever
            // http_proxy says.
            #expect(try await probe(url, environment: ["NO_PROXY": "*", "no_proxy": "*"], proxy: "127.0.0.1:\(proxy.port)") == "succeeded 200")
            #expect(try await proxy.seen().count == 2, "no_proxy bypassed an explicit proxy")
            #expect(try await probe(url, environment: ["http_proxy": address], proxy: "none") == "succeeded 200")
            #expect(try await proxy.seen().count == 2, "http_proxy was used under ProxySetting.none")
            // An https proxy in the environment is refused, never bypassed.
            let refused = try await probe(url, environment: ["http_proxy": "https://127.0.0.1:\(proxy.port)"])
            #expect(refused.hasPrefix("failed proxy failed:"), "\(refused)")
            #expect(server.hits("/echo") == 5)
        }
    }
}

/// The environment's proxy variables as the transports read them (`ProxySetting.environment`).
@Suite struct ProxyEnvironmentTests {
    let http = URL(string: "http://api.example.com/x")!
    let https = URL(string: "https://api.example.com/x")!

    func proxy(_ route: ProxyRoutes.Route) -> String? {
        if case .through(let proxy) = route { return proxy.address }
        return nil
    }

    @Test func httpProxyInLowerCaseOnlyForHTTP() {
        // httpoxy: HTTP_PROXY can be a request's `Proxy` header in a CGI-like process.
        let upper = ProxyRoutes(.environment, environment: ["HTTP_PROXY": "http://evil:1"])
        #expect(upper.route(for: http) == .direct)
        let lower = ProxyRoutes(.environment, environment: ["http_proxy": "http://proxy:3128", "HTTP_PROXY": "http://evil:1"])
        #expect(proxy(lower.route(for: http)) == "proxy:3128")
        #expect(lower.route(for: https) == .direct)
    }

    @Test func httpsProxyInEitherCaseAndAllProxyAsTheFallback() {
        #expect(proxy(ProxyRoutes(.environment, environment: ["HTTPS_PROXY": "proxy:8080"]).route(for: https)) == "proxy:8080")
        #expect(proxy(ProxyRoutes(.environment, environment: ["https_proxy": "http://a:1", "HTTPS_PROXY": "http://b:2"]).route(for: https)) == "a:1")
        let all = ProxyRoutes(.environment, environment: ["ALL_PROXY": "http://all:9"])
        #expect(proxy(all.route(for: http)) == "all:9" && proxy(all.route(for: https)) == "all:9")
        // An empty variable is none.
        #expect(ProxyRoutes(.environment, environment: ["http_proxy": ""]).route(for: http) == .direct)
        #expect(ProxyRoutes(.environment, environment: ["http_proxy": "", "all_proxy": "http://all:9"]).route(for: http) == .direct)
    }

    @Test func noProxyNamesHostsAndTheirSubdomains() {
        let routes = ProxyRoutes(.environment, environment: ["http_proxy": "http://p:1", "no_proxy": "example.com, .internal,10.0.0.1"])
        #expect(routes.route(for: URL(string: "http://example.com/")!) == .direct)
        #expect(routes.route(for: URL(string: "http://API.Example.com./")!) == .direct)
        #expect(routes.route(for: URL(string: "http://db.internal/")!) == .direct)
        #expect(routes.route(for: URL(string: "http://10.0.0.1:8080/")!) == .direct)
        #expect(proxy(routes.route(for: URL(string: "http://notexample.com/")!)) == "p:1")
        #expect(proxy(routes.route(for: URL(string: "http://10.0.0.11/")!)) == "p:1")
        #expect(ProxyRoutes(.environment, environment: ["http_proxy": "http://p:1", "NO_PROXY": "*"]).route(for: http) == .direct)
        // `*` counts alone only; addresses match exactly or by range; spaces separate too.
        #expect(proxy(ProxyRoutes(.environment, environment: ["http_proxy": "http://p:1", "no_proxy": "a.example,*"]).route(for: http)) == "p:1")
        let ranges = ProxyRoutes(.environment, environment: ["http_proxy": "http://p:1", "no_proxy": "10.0.0.0/8 0.1 192.168.1.5"])
        #expect(ranges.route(for: URL(string: "http://10.200.3.4/")!) == .direct)
        #expect(proxy(ranges.route(for: URL(string: "http://11.0.0.1/")!)) == "p:1")
        #expect(proxy(ranges.route(for: URL(string: "http://20.0.0.1/")!)) == "p:1", "an address is not matched by suffix")
        #expect(ranges.route(for: URL(string: "http://192.168.1.5/")!) == .direct)
        #expect(proxy(ranges.route(for: URL(string: "http://192.168.1.50/")!)) == "p:1")
    }

    @Test func credentialsInAProxyURLAreItsCredentialsAndAnUnsupportedProxyIsRefused() {
        let routes = ProxyRoutes(.environment, environment: ["http_proxy": "http://us%40er:p%3Ass@proxy:3128"])
        guard case .through(let proxy) = routes.route(for: http) else {
            Issue.record("no proxy")
            return
        }
        #expect(proxy.credentials == Credentials(user: "us@er", password: "p:ss"))
        #expect(proxy.url == "http://proxy:3128")
        // An https or SOCKS proxy is not supported: refused, never bypassed.
        for value in ["https://proxy:443", "socks5://proxy:1080", "http://"] {
            guard case .unusable = ProxyRoutes(.environment, environment: ["http_proxy": value]).route(for: http) else {
                Issue.record("\(value) was not refused")
                continue
            }
        }
    }

    @Test func noneAndAnExplicitProxyIgnoreTheEnvironment() {
        let environment = ["http_proxy": "http://p:1", "https_proxy": "http://p:1"]
        #expect(!ProxyRoutes(.none, environment: environment).usesProxy)
        let explicit = ProxyRoutes(.http(HTTPProxy(host: "mine", port: 2, bypass: ["api.example.com"])), environment: environment)
        #expect(explicit.route(for: http) == .direct)
        #expect(proxy(explicit.route(for: URL(string: "https://other.example/")!)) == "mine:2")
    }

    @Test func theURLSessionTransportRefusesWhatItCantApply() {
        let explicit = URLSessionTransport.proxyRefusal(.http(HTTPProxy(host: "p", port: 1, credentials: Credentials(user: "u", password: "s3cret"))), environment: [:])
        #expect(explicit?.contains("libcurl") == true && explicit?.contains("s3cret") == false)
        #expect(URLSessionTransport.proxyRefusal(.none, environment: ["https_proxy": "http://p:1"])?.contains("https_proxy") == true)
        #expect(URLSessionTransport.proxyRefusal(.none, environment: [:]) == nil)
        #expect(URLSessionTransport.proxyRefusal(.environment, environment: ["http_proxy": "http://p:1"]) == nil)
    }
}

/// The URLSession transport sends nothing under a proxy setting it can't apply.
@Suite(hangGuard, admission) struct URLSessionProxyTests {
    @Test func anExplicitProxyFailsEverySendAndNothingIsSent() async throws {
        try await withServer { server in
            let dispatcher = makeClient(server) {
                $0.transport = .urlSession
                $0.proxy = .http(HTTPProxy(host: "127.0.0.1", port: 9))
            }
            do {
                _ = try await dispatcher.response(for: Get("/echo"))
                Issue.record("the URLSession transport sent a request outside the proxy it was given")
            } catch NetworkError.proxyFailed(let reason) {
                #expect(reason.contains("URLSession"))
            }
            #expect(server.totalRequests == 0)
        }
    }
}
