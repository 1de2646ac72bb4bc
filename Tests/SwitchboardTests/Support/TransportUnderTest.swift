import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Switchboard
import SwitchboardTesting
import Testing

/// The transports the conformance suite runs against: every transport the package has.
enum TransportUnderTest: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `URLSessionTransport` over real sockets to the loopback servers.
    case urlSession
    /// `StubTransport` answering from the same servers' routes in-process, without a socket: the
    /// transport-independent rules must hold there as well.
    case stub
    /// `CurlTransport` (libcurl's multi interface) over real sockets, where libcurl loads (Linux).
    case curl

    /// Every kind, the libcurl transport included: on this project's machines libcurl is always there,
    /// so a `.curl` case that can't load it fails (``make(_:configuration:)``), never quietly runs on
    /// URLSession. `SWITCHBOARD_SKIP_CURL=<reason>` leaves it out, visibly: the reason is printed once.
    /// The sanitizer stages run it too (`.ci/run` sets `SWITCHBOARD_SANITIZE_CURL=1`); without that
    /// variable a sanitized run leaves it out and says so, as an opt-out.
    static var allCases: [TransportUnderTest] { curlOptOut == nil ? [.urlSession, .stub, .curl] : [.urlSession, .stub] }

    /// The kinds that use sockets: what the fault suite, idle timeouts and content decoding need.
    static var network: [TransportUnderTest] { allCases.filter { $0 != .stub } }

    /// Why the `.curl` cases are left out of this run, or `nil` when they run (printed once when set).
    static let curlOptOut: String? = {
        let environment = ProcessInfo.processInfo.environment
        var reason: String?
        #if !canImport(Glibc)
        reason = "the libcurl transport is built for Linux only"
        #endif
        if let given = environment["SWITCHBOARD_SKIP_CURL"] {
            reason = "SWITCHBOARD_SKIP_CURL=\(given)"
        } else if (runsUnderThreadSanitizer || runsUnderAddressSanitizer) && environment["SWITCHBOARD_SANITIZE_CURL"] == nil {
            reason = "a sanitized run without SWITCHBOARD_SANITIZE_CURL=1"
        }
        if let reason { print("⚠︎ the libcurl transport's test cases are SKIPPED: \(reason)") }
        return reason
    }()

    /// The trait of a test of the libcurl transport alone: it runs wherever the `.curl` cases run and is
    /// skipped, visibly and with the reason, where they are opted out.
    static let curlOnly = ConditionTrait.enabled(
        if: curlOptOut == nil, "the libcurl transport's cases are opted out (SWITCHBOARD_SKIP_CURL, or a sanitized run without SWITCHBOARD_SANITIZE_CURL=1)")

    var testDescription: String { rawValue }

    /// A transport of this kind that reaches `servers` (by port). A `.curl` kind whose libcurl doesn't
    /// load records a test failure (and answers through a transport that fails every send).
    func make(_ servers: [LoopbackServer], configuration: Configuration = Configuration()) -> any Transport {
        switch self {
        case .urlSession: return URLSessionTransport(configuration: configuration)
        case .stub: return Self.inProcess(servers)
        case .curl:
            #if canImport(Glibc)
            do {
                return try CurlTransport(configuration: configuration)
            } catch {
                Issue.record("the libcurl transport did not load: \(error)")
            }
            #else
            Issue.record("the libcurl transport is built for Linux only")
            #endif
            return Self.failing
        }
    }

    /// A transport that fails every send: what a `.curl` case gets when libcurl doesn't load, after
    /// the failure is recorded.
    private static var failing: StubTransport {
        StubTransport(failing: { _ in .failure(.transport(URLError(.cannotLoadFromNetwork))) })
    }

    /// The factory for a dispatcher's configuration. Only the network kinds have one: the stub's
    /// answers come from servers, so a stub case builds its transport with ``make(_:configuration:)``
    /// (a `.stub` here is a mistake in the test, and traps).
    var factory: TransportFactory {
        switch self {
        case .urlSession: return .urlSession
        case .curl: return .curl  // fails every send, with libcurl's load error, where it doesn't load
        case .stub: preconditionFailure("a stub case takes its transport from make(_:), with the servers it answers for")
        }
    }

    /// A stub whose answers are the routes of `servers`, matched by the request's port.
    static func inProcess(_ servers: [LoopbackServer]) -> StubTransport {
        StubTransport(failing: { request in
            guard let url = request.url, let server = servers.first(where: { Int($0.port) == url.port }) else {
                return .failure(.transport(URLError(.cannotConnectToHost)))
            }
            let target = url.path.isEmpty ? "/" : url.path + (url.query.map { "?" + $0 } ?? "")
            var headers = (request.allHTTPHeaderFields ?? [:]).map { (name: $0.key, value: $0.value) }
            if let body = request.httpBody, !body.isEmpty { headers.append((name: "Content-Length", value: "\(body.count)")) }
            let method = request.httpMethod ?? "GET"
            let response = server.respond(to: ServerRequest(method: method, target: target, headers: headers, body: request.httpBody ?? Data()))
            var fields: [String: String] = [:]
            for (name, value) in response.headers { fields[name] = value }
            let body: Data
            var delay: TimeInterval = 0
            switch response.body {
            case .data(let data): body = data
            case .chunks(let parts, let interval):
                body = parts.reduce(into: Data()) { $0.append($1) }
                delay = interval * Double(parts.count)
            case .abort(let sending, let declared):
                fields["Content-Length"] = "\(declared)"
                body = sending
            case .generated(let length, let abortAfter, _, let fill):
                // Made whole (the tests' resources are small); a cut stands as a short body.
                var data = Data(count: min(length, abortAfter ?? length))
                data.withUnsafeMutableBytes { fill(0, $0) }
                fields["Content-Length"] = "\(length)"
                body = data
            default:
                return .failure(.transport(URLError(.networkConnectionLost)))
            }
            if fields["Content-Length"] == nil, case .data = response.body { fields["Content-Length"] = "\(body.count)" }
            return .success(StubTransport.Answer(status: response.status, headers: fields, body: method == "HEAD" ? Data() : body, delay: delay))
        })
    }
}

/// What one transfer reported, in order.
struct TransferRecord: Sendable {
    var heads: [HTTPURLResponse] = []
    var progress: [TransferProgress] = []
    /// Callbacks after the completion (must stay 0), and completions (must be 1).
    var late = 0
    var completions = 0
    var result: Result<TransportResponse, NetworkError>?
    /// Whether a progress value with received bytes came before the head.
    var bodyBeforeHead = false
    var cancelledAt: Date?
    var completedAt: Date?
    /// When the last body byte arrived (the last progress value that received more).
    var lastByteAt: Date?
}

/// Runs one transfer on `transport` and waits for its completion (or `timeout`), without blocking a
/// thread.
func transfer(
    _ transport: any Transport,
    _ request: TransportRequest,
    options: TransferOptions = TransferOptions(timeout: 30),
    head: (@Sendable (HTTPURLResponse) -> HeadDecision)? = nil,
    cancelAfter: TimeInterval? = nil,
    cancelAtFirstByte: Bool = false,
    timeout: TimeInterval = 30,
    settles: Bool = true
) async -> TransferRecord {
    let record = Box(TransferRecord())
    // `cancelAtFirstByte`: the progress callback that first reports a body byte cancels (the task may
    // not be stored yet; then the cancel follows `perform`'s return).
    let running = Box<(any TransportTask)?>(nil)
    let cancelWanted = Box(false)
    let waiter = Box<CheckedContinuation<Void, Never>?>(nil)
    let resume: @Sendable () -> Void = {
        waiter.mutate { stored in
            stored?.resume()
            stored = nil
        }
    }
    let callbacks = TransferCallbacks(
        head: { response in
            record.mutate { record in
                if record.completions > 0 { record.late += 1 }
                record.heads.append(response)
            }
            return head?(response) ?? .proceed
        },
        progress: { value in
            record.mutate { record in
                if record.completions > 0 { record.late += 1 }
                if record.heads.isEmpty, value.bytesReceived > 0 { record.bodyBeforeHead = true }
                if value.bytesReceived > (record.progress.last?.bytesReceived ?? 0) { record.lastByteAt = Date() }
                record.progress.append(value)
            }
            if cancelAtFirstByte, value.bytesReceived > 0 {
                let first = record.mutate { record -> Bool in
                    guard record.cancelledAt == nil else { return false }
                    record.cancelledAt = Date()
                    return true
                }
                if first {
                    cancelWanted.mutate { $0 = true }
                    running.value?.cancel()
                }
            }
        },
        completion: { result in
            record.mutate { record in
                record.completions += 1
                if record.result == nil {
                    record.result = result
                    record.completedAt = Date()
                }
            }
            resume()
        }
    )
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        waiter.mutate { $0 = continuation }
        let task = transport.perform(request, options: options, callbacks: callbacks)
        running.mutate { $0 = task }
        if cancelWanted.value { task.cancel() }
        if let cancelAfter {
            DispatchQueue.global().asyncAfter(deadline: .now() + cancelAfter) {
                record.mutate { $0.cancelledAt = Date() }
                task.cancel()
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: resume)
        if record.value.completions > 0 { resume() }
    }
    // A second completion or a late callback would come before the transport says it reported the end.
    // (`settles: false` when the test holds another transfer on the transport on purpose.)
    if settles, !(await settled(transport, timeout: max(timeout, 30))) {
        Issue.record("the transport still has a transfer that hasn't reported its end")
    }
    return record.value
}

extension TransferRecord {
    var response: TransportResponse? { try? result?.get() }
    var error: NetworkError? {
        if case .failure(let error) = result { return error }
        return nil
    }
    var json: JSON { (try? JSON.parse(response?.data ?? Data())) ?? .null }
}
