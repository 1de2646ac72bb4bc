import Foundation
import LoopbackServer
import Switchboard
import Testing

/// Seed 001's security policy on the libcurl transport, against HTTPS servers presenting certificates
/// made for the test (``TLSLab``): none of them is in the machine's trust store, so each is trusted
/// only through a policy, as an app would trust its private CA.
@Suite(TransportUnderTest.curlOnly, .enabled(if: TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? "")"), hangGuard, admission)
struct TrustPolicyTests {
    /// A dispatcher on the libcurl transport with `trust`.
    func client(_ trust: ServerTrust) -> Dispatcher {
        Dispatcher(
            configuration: Configuration {
                $0.transport = .curl
                $0.serverTrust = trust
                $0.callbackQueue = .immediate
                $0.cache = nil
            })
    }

    func client(_ policy: TrustPolicy) -> Dispatcher { client(ServerTrust(defaultPolicy: policy)) }

    /// The trust failure a send ended with, or a test failure.
    func trustFailure(_ client: Dispatcher, _ url: URL, sourceLocation: SourceLocation = #_sourceLocation) async -> TrustFailure? {
        do {
            let response = try await client.response(for: Get(url.absoluteString))
            Issue.record("expected a trust failure, got \(response.statusCode)", sourceLocation: sourceLocation)
        } catch NetworkError.serverTrustFailed(let failure) {
            return failure
        } catch {
            Issue.record("expected serverTrustFailed, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func theSystemsCAsRefuseAServerFromAPrivateCA() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        let failure = await trustFailure(client(TrustPolicy.system), servers.url(0))
        #expect(failure?.check == .chain)
        #expect(failure?.host == "localhost")
    }

    @Test func extraCAsAndOnlyTheseCAsTrustThePrivateCA() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        let ca = try lab.caA.trustCertificate()
        for policy in [TrustPolicy.extraCAs([ca]), .onlyCAs([ca])] {
            let response = try await client(policy).response(for: Get(servers.url(0).absoluteString))
            #expect(response.json["ok"] == true, "\(policy)")
        }
    }

    @Test func onlyTheseCAsRefuseAServerFromAnotherCA() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.serverB)])
        defer { servers.stop() }
        let failure = await trustFailure(client(.onlyCAs([try lab.caA.trustCertificate()])), servers.url(0))
        #expect(failure?.check == .chain)
        // The same server is trusted through its own CA: the refusal was the anchors'.
        let trusted = try await client(.onlyCAs([try lab.caB.trustCertificate()])).response(for: Get(servers.url(0).absoluteString))
        #expect(trusted.json["ok"] == true)
    }

    @Test func aDERCertificateIsAnAnchorAsItsPEMIs() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        let der = try await TLSLab.output(of: "openssl x509 -in '\(lab.caA.certificate.path)' -outform DER | openssl base64 -A")
        let ca = try TrustCertificate(der: try #require(Data(base64Encoded: der.trimmingCharacters(in: .whitespacesAndNewlines))))
        #expect(ca == (try lab.caA.trustCertificate()))
        let response = try await client(.onlyCAs([ca])).response(for: Get(servers.url(0).absoluteString))
        #expect(response.json["ok"] == true)
    }

    @Test func aPinOfTheLeafKeyAcceptsAWrongPinRefusesABackupPinAccepts() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        let anchors = TrustPolicy.Anchors.only([try lab.caA.trustCertificate()])
        let serverPin = try PublicKeyPin(sha256Base64: lab.serverPin)
        let otherPin = try PublicKeyPin(sha256Base64: "sha256//" + lab.otherKeyPin)
        // The package's own pin of the certificate is openssl's.
        #expect(try lab.server.trustCertificate().publicKeyPin == serverPin)

        let matching = try await client(.pinnedPublicKeys([serverPin], anchors: anchors)).response(for: Get(servers.url(0).absoluteString))
        #expect(matching.json["ok"] == true)
        let wrong = await trustFailure(client(.pinnedPublicKeys([otherPin], anchors: anchors)), servers.url(0))
        #expect(wrong?.check == .publicKeyPin)
        // The server's key pinned as the backup, beside a current pin it doesn't have.
        let backup = try await client(.pinnedPublicKeys([otherPin, serverPin], anchors: anchors)).response(for: Get(servers.url(0).absoluteString))
        #expect(backup.json["ok"] == true)
        // A CA's key is not the leaf's: pinning the CA refuses (libcurl pins the leaf, not the chain).
        let caPin = try lab.caA.trustCertificate().publicKeyPin
        #expect(await trustFailure(client(.pinnedPublicKeys([caPin], anchors: anchors)), servers.url(0))?.check == .publicKeyPin)
    }

    @Test func aPinIsCheckedOnTopOfTheChainNotInsteadOfIt() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        // The right pin, but the server's CA is not an anchor (the system's CAs): refused by the chain.
        let failure = await trustFailure(client(.pinnedPublicKeys([try PublicKeyPin(sha256Base64: lab.serverPin)])), servers.url(0))
        #expect(failure?.check == .chain)
    }

    @Test func pinnedCertificatesAreTheOnlyAnchors() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        // The server's own certificate as the anchor (no CA given).
        let leaf = try await client(.pinnedCertificates([try lab.server.trustCertificate()])).response(for: Get(servers.url(0).absoluteString))
        #expect(leaf.json["ok"] == true)
        // Another certificate for the same names, by the same CA: not pinned, refused.
        let other = await trustFailure(client(.pinnedCertificates([try lab.serverOtherKey.trustCertificate()])), servers.url(0))
        #expect(other?.check == .chain)
    }

    @Test func anExpiredCertificateAndOneForAnotherHostAreRefused() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.expired), .init(pair: lab.wrongHost)])
        defer { servers.stop() }
        let trusting = client(.onlyCAs([try lab.caA.trustCertificate()]))
        #expect(await trustFailure(trusting, servers.url(0))?.check == .validity)
        #expect(await trustFailure(trusting, servers.url(1))?.check == .hostName)
    }

    @Test func aClientCertificateIsSentWhenTheServerRequiresOne() async throws {
        let lab = try await TLSLab.materials()
        // TLS 1.3 and 1.2; the refusals against the 1.2 server, which refuses inside the handshake
        // (a 1.3 server refuses after it, and its alert can be lost in the close's reset).
        let servers = try await TLSServers.start([.init(pair: lab.server, clientCA: lab.clientCA), .init(pair: lab.server, clientCA: lab.clientCA, tls12: true)])
        defer { servers.stop() }
        let anchors = TrustPolicy.onlyCAs([try lab.caA.trustCertificate()])
        let identity = try ClientIdentity(certificate: try lab.client.trustCertificate(), privateKeyPEM: lab.client.keyPEM)
        for index in 0..<2 {
            let response = try await client(anchors.presenting(identity)).response(for: Get(servers.url(index).absoluteString))
            #expect(response.json["client"] == "client", "the server saw the client certificate's name")
        }
        // None, or one from a CA the server doesn't take: the server refuses it, a typed error. A
        // TLS 1.2 server's refusal of a missing certificate is the bare "handshake failure" alert.
        #expect(await trustFailure(client(anchors), servers.url(1))?.check == .handshake)
        let stranger = try ClientIdentity(certificate: try lab.strangerClient.trustCertificate(), privateKeyPEM: lab.strangerClient.keyPEM)
        #expect(await trustFailure(client(anchors.presenting(stranger)), servers.url(1))?.check == .clientCertificate)
    }

    @Test func aClientKeyThatIsNotTheCertificatesIsATypedError() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server, clientCA: lab.clientCA)])
        defer { servers.stop() }
        let mismatched = try ClientIdentity(certificate: try lab.client.trustCertificate(), privateKeyPEM: lab.strangerClient.keyPEM)
        let failure = await trustFailure(client(TrustPolicy.onlyCAs([try lab.caA.trustCertificate()]).presenting(mismatched)), servers.url(0))
        #expect(failure?.check == .clientIdentity)
    }

    /// A traditionally encrypted key (`Proc-Type: 4,ENCRYPTED`): refused without its passphrase when
    /// made (libcurl 7.88 crashed the process on it), a typed error with a wrong one, sent with the right one.
    @Test func anEncryptedClientKeyNeedsItsPassphrase() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server, clientCA: lab.clientCA, tls12: true)])
        defer { servers.stop() }
        let key = try Data(contentsOf: lab.encryptedClientKey)
        #expect(String(decoding: key, as: UTF8.self).contains("Proc-Type: 4,ENCRYPTED"))
        let certificate = try lab.client.trustCertificate()
        #expect(throws: TrustPolicyError.self) { try ClientIdentity(certificate: certificate, privateKeyPEM: key) }
        let anchors = TrustPolicy.onlyCAs([try lab.caA.trustCertificate()])
        let wrong = try ClientIdentity(certificate: certificate, privateKeyPEM: key, passphrase: "not it")
        #expect(await trustFailure(client(anchors.presenting(wrong)), servers.url(0))?.check == .clientIdentity)
        let right = try ClientIdentity(certificate: certificate, privateKeyPEM: key, passphrase: "secret")
        let response = try await client(anchors.presenting(right)).response(for: Get(servers.url(0).absoluteString))
        #expect(response.json["client"] == "client")
        // Neither the key nor its passphrase shows in a dump.
        var dumped = ""
        dump(right, to: &dumped)
        #expect(!dumped.contains("secret") && !dumped.contains("ENCRYPTED"), "\(dumped)")
    }

    /// A host given the system's policy of its own is judged by it, not by the default.
    @Test func aHostsOwnSystemPolicyIsNotTheDefault() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        var trust = ServerTrust(defaultPolicy: .onlyCAs([try lab.caA.trustCertificate()]))
        trust["localhost"] = .system
        let dispatcher = client(trust)
        #expect(await trustFailure(dispatcher, servers.url(0))?.check == .chain)
        let other = try await dispatcher.response(for: Get(servers.url(0, host: "127.0.0.1").absoluteString))
        #expect(other.json["ok"] == true)
    }

    /// A policy for an IPv4 address applies however a URL writes the address (libcurl connects to
    /// `127.1` and `2130706433` as `127.0.0.1`).
    @Test func aPolicyForAnAddressAppliesToEveryFormOfIt() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        let ca = try lab.caA.trustCertificate()
        var trust = ServerTrust(defaultPolicy: .onlyCAs([ca]))
        trust["127.0.0.1"] = .pinnedPublicKeys([try PublicKeyPin(sha256Base64: lab.otherKeyPin)], anchors: .only([ca]))
        for host in ["127.0.0.1", "127.1", "2130706433", "0x7f.0.0.1"] {
            let failure = await trustFailure(client(trust), servers.url(0, host: host))
            #expect(failure?.check == .publicKeyPin, "\(host): \(String(describing: failure))")
        }
    }

    @Test func aRedirectIsJudgedByThePolicyOfTheHostItGoesTo() async throws {
        let lab = try await TLSLab.materials()
        // Both servers' certificates name localhost and 127.0.0.1: the host names tell the policies apart.
        let servers = try await TLSServers.start([.init(pair: lab.server), .init(pair: lab.server)])
        defer { servers.stop() }
        let ca = try lab.caA.trustCertificate()
        let target = servers.url(1, host: "127.0.0.1")
        let start = URL(string: "https://localhost:\(servers.ports[0])/redirect?to=\(target.absoluteString)")!

        var trust = ServerTrust()
        trust["localhost"] = .onlyCAs([ca])
        // 127.0.0.1 has no policy of its own: the system's CAs refuse it.
        var failure = await trustFailure(client(trust), start)
        #expect(failure?.host == "127.0.0.1")
        #expect(failure?.check == .chain)
        // Its own policy pins another key: refused by that pin, after the first hop was trusted.
        trust["127.0.0.1"] = .pinnedPublicKeys([try PublicKeyPin(sha256Base64: lab.otherKeyPin)], anchors: .only([ca]))
        failure = await trustFailure(client(trust), start)
        #expect(failure?.host == "127.0.0.1")
        #expect(failure?.check == .publicKeyPin)
        // And trusted when its policy trusts it.
        trust["127.0.0.1"] = .onlyCAs([ca])
        let response = try await client(trust).response(for: Get(start.absoluteString))
        #expect(response.json["path"] == "/hello")
    }

    @Test func aPolicyChangedOnADispatcherAppliesToTheNextSend() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server)])
        defer { servers.stop() }
        let anchors = TrustPolicy.Anchors.only([try lab.caA.trustCertificate()])
        let dispatcher = client(.pinnedPublicKeys([try PublicKeyPin(sha256Base64: lab.serverPin)], anchors: anchors))
        let first = try await dispatcher.response(for: Get(servers.url(0).absoluteString))
        #expect(first.json["ok"] == true)
        // The open connection was made under the old pin: it must not carry a send under the new one.
        dispatcher.updateConfiguration { $0.serverTrust.defaultPolicy = .pinnedPublicKeys([try! PublicKeyPin(sha256Base64: lab.otherKeyPin)], anchors: anchors) }
        #expect(await trustFailure(dispatcher, servers.url(0))?.check == .publicKeyPin)
    }

    @Test func aDevelopmentHostAcceptsAnyCertificateOnlyThatHost() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.serverB), .init(pair: lab.expired)])
        defer { servers.stop() }
        var trust = ServerTrust()
        trust.developmentHosts = ["LocalHost."]  // compared without case or a trailing dot
        let dispatcher = client(trust)
        for index in 0..<2 {
            let response = try await dispatcher.response(for: Get(servers.url(index).absoluteString))
            #expect(response.json["ok"] == true)
        }
        // The same servers under another name are checked.
        #expect(await trustFailure(dispatcher, servers.url(0, host: "127.0.0.1"))?.check == .chain)
        #expect(await trustFailure(dispatcher, servers.url(1, host: "127.0.0.1")) != nil)
    }
}

/// Trust settings that can't be applied are refused before anything is sent, on both transports.
@Suite(.enabled(if: TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? "")"), hangGuard, admission)
struct TrustPolicyRefusalTests {
    /// Sends once with `trust` on `kind` and returns the error; the server must have seen nothing.
    func refusal(_ kind: TransportUnderTest, _ trust: ServerTrust) async throws -> NetworkError? {
        try await withServer { server in
            var configuration = Configuration {
                $0.serverTrust = trust
                $0.baseURL = server.baseURL
                $0.callbackQueue = .immediate
            }
            // The transport made from the configuration, as a dispatcher's factory makes it.
            configuration.transport = .using(kind.make([server], configuration: configuration))
            let dispatcher = Dispatcher(configuration: configuration)
            defer { _ = dispatcher }
            var caught: NetworkError?
            do {
                _ = try await dispatcher.response(for: Get("/json"))
            } catch {
                caught = error as? NetworkError
            }
            #expect(server.totalRequests == 0 && server.connectionsAccepted == 0, "nothing may be sent under a trust setting that can't be applied")
            return caught
        }
    }

    @Test(arguments: TransportUnderTest.network)
    func aWildcardDevelopmentHostAnEmptyCAOrPinListOrAHostWithAPortIsRefused(_ kind: TransportUnderTest) async throws {
        var wildcard = ServerTrust()
        wildcard.developmentHosts = ["*"]
        var empty = ServerTrust()
        empty["127.0.0.1"] = .onlyCAs([])
        let noPins = ServerTrust(defaultPolicy: .pinnedPublicKeys([]))
        var withPort = ServerTrust()
        withPort["127.0.0.1:443"] = .onlyCAs([])
        var wildcardHost = ServerTrust()
        let client = try await TLSLab.materials().client
        wildcardHost["*.example.com"] = .system.presenting(try ClientIdentity(certificate: try client.trustCertificate(), privateKeyPEM: client.keyPEM))
        for trust in [wildcard, empty, noPins, withPort, wildcardHost] {
            let error = try await refusal(kind, trust)
            guard case .unsupportedTrustPolicy(let reason)? = error else {
                Issue.record("expected unsupportedTrustPolicy on \(kind), got \(String(describing: error))")
                continue
            }
            #expect(!reason.isEmpty)
        }
    }

    /// A transport given to the dispatcher (or made without the setting) doesn't apply its trust: the
    /// send fails, nothing is sent.
    @Test(arguments: TransportUnderTest.network) func aTransportThatDoesNotApplyTheTrustSendsNothing(_ kind: TransportUnderTest) async throws {
        let pinned = ServerTrust(defaultPolicy: .pinnedPublicKeys([try PublicKeyPin(sha256Base64: String(repeating: "A", count: 43) + "=")]))
        try await withServer { server in
            let given = kind.make([server])  // made with the default configuration
            let configuration = Configuration {
                $0.serverTrust = pinned
                $0.baseURL = server.baseURL
                $0.callbackQueue = .immediate
            }
            var using = configuration
            using.transport = .using(given)
            for dispatcher in [Dispatcher(configuration: configuration, transport: given), Dispatcher(configuration: using)] {
                do {
                    _ = try await dispatcher.response(for: Get("/json"))
                    Issue.record("\(kind): a send went out through a transport that doesn't apply the trust setting")
                } catch NetworkError.unsupportedTrustPolicy(let reason) {
                    #expect(reason.contains("doesn't apply"))
                }
            }
            #expect(server.totalRequests == 0 && server.connectionsAccepted == 0)
        }
    }

    @Test func theURLSessionTransportRefusesEveryPolicyButTheSystems() async throws {
        var pinned = ServerTrust()
        pinned["example.com"] = .pinnedPublicKeys([try PublicKeyPin(sha256Base64: String(repeating: "A", count: 43) + "=")])
        var development = ServerTrust()
        development.developmentHosts = ["dev.local"]
        for trust in [pinned, development] {
            let error = try await refusal(.urlSession, trust)
            guard case .unsupportedTrustPolicy(let reason)? = error else {
                Issue.record("expected unsupportedTrustPolicy, got \(String(describing: error))")
                continue
            }
            #expect(reason.contains("URLSession"))
        }
        // The control: with the system's trust the same send goes out (and meets the route's 404).
        try await withServer { server in
            let dispatcher = Dispatcher(
                configuration: Configuration {
                    $0.baseURL = server.baseURL; $0.callbackQueue = .immediate
                })
            await #expect(throws: NetworkError.self) { _ = try await dispatcher.response(for: Get("/json")) }
            #expect(server.totalRequests == 1)
        }
    }
}

/// The URLSession transport under the system's trust: a server it can't trust is the same typed error.
@Suite(.enabled(if: TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? "")"), hangGuard, admission)
struct URLSessionTrustTests {
    @Test func aServerTheSystemDoesNotTrustIsServerTrustFailed() async throws {
        let lab = try await TLSLab.materials()
        let servers = try await TLSServers.start([.init(pair: lab.server), .init(pair: lab.expired), .init(pair: lab.wrongHost)])
        defer { servers.stop() }
        let client = Dispatcher(
            configuration: Configuration {
                $0.callbackQueue = .immediate; $0.cache = nil
            })
        for index in 0..<3 {
            do {
                _ = try await client.response(for: Get(servers.url(index).absoluteString))
                Issue.record("server \(index) was trusted")
            } catch NetworkError.serverTrustFailed(let failure) {
                #expect(failure.host == "localhost")
                #expect(failure.check == .chain, "\(failure)")
            } catch {
                Issue.record("server \(index): expected serverTrustFailed, got \(error)")
            }
        }
    }
}

/// "Only these CAs" leaves out the system's store entirely, its bundle file and its CA folder, and
/// "the system's and these" keeps both: shown against a system store the test makes (one CA in the
/// bundle, another in the folder), seen by the probe alone in a mount namespace of its own.
@Suite(
    TransportUnderTest.curlOnly, .enabled(if: TLSLab.unavailable == nil, "\(TLSLab.unavailable ?? "")"),
    .enabled(if: TLSLab.systemStoreUnavailable == nil, "\(TLSLab.systemStoreUnavailable ?? "")"), hangGuard, admission)
struct SystemStoreTrustTests {
    @Test func onlyTheseCAsLeaveOutTheSystemsBundleAndFolderAndExtraCAsKeepBoth() async throws {
        let lab = try await TLSLab.materials()
        let probe = try #require(ChildProcessFaultTests.probe, "switchboard-probe is not built beside the tests")
        let servers = try await TLSServers.start([.init(pair: lab.systemBundleServer), .init(pair: lab.systemFolderServer), .init(pair: lab.server)])
        defer { servers.stop() }
        // The store: the bundle file holds one CA, the folder (by OpenSSL's hashed name) the other.
        let store = lab.folder.appendingPathComponent("system-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: store) }
        try FileManager.default.copyItem(at: lab.systemBundleCA.certificate, to: store.appendingPathComponent("ca-certificates.crt"))
        let hash = try await TLSLab.output(of: "openssl x509 -hash -noout -in '\(lab.systemFolderCA.certificate.path)'").trimmingCharacters(in: .whitespacesAndNewlines)
        try FileManager.default.copyItem(at: lab.systemFolderCA.certificate, to: store.appendingPathComponent("\(hash).0"))
        let urls = (0..<3).map { servers.url($0).absoluteString }.joined(separator: " ")

        func run(_ anchors: String) async throws -> [String] {
            let command =
                "unshare --mount --propagation private sh -c \"mount --bind '\(store.path)' /etc/ssl/certs && exec '\(probe.path)' trust \(anchors) '\(lab.caA.certificate.path)' \(urls)\""
            return try await TLSLab.output(of: command).split(separator: "\n").map(String.init)
        }
        // The control: the system's trust takes both of the store's CAs (so the namespace is in place
        // and libcurl reads that bundle and that folder), and not the test's own CA.
        #expect(try await run("system") == ["1 succeeded 200", "2 succeeded 200", "3 refused chain"])
        #expect(try await run("only") == ["1 refused chain", "2 refused chain", "3 succeeded 200"])
        #expect(try await run("extra") == ["1 succeeded 200", "2 succeeded 200", "3 succeeded 200"])
    }
}
