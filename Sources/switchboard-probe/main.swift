import Dispatch
import Foundation
import Switchboard

/// `switchboard-probe`: one transfer in a process of its own, its outcome printed on one line.
///
/// - `switchboard-probe <url> [timeout]`: one GET; prints `succeeded <status>` or `failed <error>`.
///   A crash of the process is the outcome the fault suite runs it for: cases where the platform's
///   URLSession kills the process that meets them (a status line, then close) run here, in a child
///   process, so the suite survives them.
/// - `switchboard-probe upload <url> <file>`: a multipart POST with the file as a part (from disk, as
///   a large body is sent); prints `succeeded <status> <peak KiB> <reply>`.
/// - `switchboard-probe download <url> <destination>`: a download to a file; prints
///   `succeeded <status> <peak KiB> <bytes>`.
/// - `switchboard-probe race <url> <timeout> <url> <timeout>`: two sends at once on one dispatcher,
///   each printed as it ends (see `race`): does one send's trouble hold up the other's deadline?
/// - `switchboard-probe curl <url> [environment|none|host:port]`: one GET on the libcurl transport
///   with that proxy setting (default: the environment's); prints `succeeded <status>` or
///   `failed <error>`.
/// - `switchboard-probe trust <system|extra|only> <CA PEM file or -> <url>…`: a GET of each URL in
///   turn on the libcurl transport under that trust policy; prints `<n> succeeded <status>`,
///   `<n> refused <check>` or `<n> failed <error>` for each (the trust tests run it where the system's
///   CA store is one they made, in a mount namespace of its own).
///
/// - `switchboard-probe starved <deadline|cancel>`: a send that ends while every global worker is
///   blocked (see `starved`).
///
/// `<peak KiB>` is how far the process's resident memory rose above where it was before the transfer
/// (Linux: the peak, `VmHWM`, reset first); -1 where that can't be read.

struct Probe: Request {
    let url: String
    let deadline: TimeInterval
    var path: String { url }
    var timeout: TimeInterval? { deadline }
    var responseFormat: ResponseFormat { .data }
    var validation: Validation { Validation(statusCodes: StatusCodes(100..<600)) }
}

struct UploadProbe: Request {
    let url: String
    let file: URL
    var method: HTTPMethod { .post }
    var path: String { url }
    var timeout: TimeInterval? { 600 }
    var body: RequestBody? { .multipart { $0.append(fileAt: file, name: "file") } }
}

/// Resident memory: now, and the peak since the last reset (KiB, from /proc/self/status).
enum Memory {
    static func field(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }

    /// Resets the peak to the current size (Linux 4.0+); returns the current size.
    static func resetPeak() -> Int {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return field("VmRSS") ?? 0
    }

    static var peak: Int? { field("VmHWM") }
}

func run<R: Request>(_ request: R, describe: @escaping @Sendable (Response<R>, Int) -> String) -> Never {
    let client = Dispatcher(
        configuration: Configuration {
            $0.callbackQueue = .immediate
            $0.partialDownloadsDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-probe-\(getpid())")
        })
    let done = DispatchSemaphore(value: 0)
    let before = Memory.resetPeak()
    client.send(request) { result in
        let growth = Memory.peak.map { max(0, $0 - before) } ?? -1
        switch result {
        case .success(let response): print(describe(response, growth))
        case .failure(let error): print("failed \(error)")
        }
        done.signal()
    }
    done.wait()
    exit(0)
}

/// Two sends at once on one dispatcher; prints, for each as it ends, `<n> succeeded <status> <header
/// count> <seconds>` or `<n> failed <error> <seconds>`, with n 1 or 2 in the order given.
func race(_ first: String, _ firstDeadline: TimeInterval, _ second: String, _ secondDeadline: TimeInterval) -> Never {
    let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
    let done = DispatchGroup()
    let started = Date()
    for (n, (url, deadline)) in [(first, firstDeadline), (second, secondDeadline)].enumerated() {
        done.enter()
        client.send(Probe(url: url, deadline: deadline)) { result in
            let seconds = String(format: "%.3f", Date().timeIntervalSince(started))
            let line: String
            switch result {
            case .success(let response): line = "\(n + 1) succeeded \(response.statusCode) \(response.headers.count) \(seconds)\n"
            case .failure(let error): line = "\(n + 1) failed \(error) \(seconds)\n"
            }
            FileHandle.standardOutput.write(Data(line.utf8))  // unbuffered: each line as the send ends
            done.leave()
        }
    }
    done.wait()
    exit(0)
}

/// GETs each of `urls` in turn on the libcurl transport with `anchors` (`system`, `extra` or `only`,
/// with the CAs of `caFile`), and prints each outcome.
func trust(_ anchors: String, _ caFile: String, _ urls: [String]) -> Never {
    var policy = TrustPolicy.system
    if anchors != "system" {
        guard let pem = FileManager.default.contents(atPath: caFile), let certificates = try? TrustCertificate.certificates(pem: pem) else {
            print("failed: no CA certificates in \(caFile)")
            exit(1)
        }
        policy = anchors == "only" ? .onlyCAs(certificates) : .extraCAs(certificates)
    }
    let client = Dispatcher(
        configuration: Configuration {
            $0.callbackQueue = .immediate
            $0.transport = .curl
            $0.serverTrust = ServerTrust(defaultPolicy: policy)
            $0.cache = nil
        })
    for (n, url) in urls.enumerated() {
        let done = DispatchSemaphore(value: 0)
        client.send(Probe(url: url, deadline: 20)) { result in
            switch result {
            case .success(let response): print("\(n + 1) succeeded \(response.statusCode)")
            case .failure(.serverTrustFailed(let failure)): print("\(n + 1) refused \(failure.check.rawValue)")
            case .failure(let error): print("\(n + 1) failed \(error)")
            }
            done.signal()
        }
        done.wait()
    }
    exit(0)
}

var arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "upload" where arguments.count == 3:
    run(UploadProbe(url: arguments[1], file: URL(fileURLWithPath: arguments[2]))) { response, growth in
        "succeeded \(response.statusCode) \(growth) \(String(decoding: response.data, as: UTF8.self))"
    }
case "download" where arguments.count == 3:
    run(Download(arguments[1], to: URL(fileURLWithPath: arguments[2]))) { response, growth in
        let size = (try? FileManager.default.attributesOfItem(atPath: response.fileURL?.path ?? "")[.size] as? NSNumber)?.intValue ?? -1
        return "succeeded \(response.statusCode) \(growth) \(size)"
    }
case "race" where arguments.count == 5:
    race(arguments[1], TimeInterval(arguments[2]) ?? 10, arguments[3], TimeInterval(arguments[4]) ?? 1)
case "curl" where arguments.count == 2 || arguments.count == 3:
    // One GET on the libcurl transport: the environment's proxy, no proxy (`none`), or `host:port`.
    let proxy: ProxySetting
    switch arguments.count == 3 ? arguments[2] : "environment" {
    case "environment": proxy = .environment
    case "none": proxy = .none
    case let address:
        let parts = address.split(separator: ":")
        proxy = .http(HTTPProxy(host: String(parts.first ?? ""), port: Int(parts.last ?? "") ?? 0))
    }
    let client = Dispatcher(
        configuration: Configuration {
            $0.callbackQueue = .immediate
            $0.transport = .curl
            $0.cache = nil
            $0.proxy = proxy
        })
    let done = DispatchSemaphore(value: 0)
    client.send(Probe(url: arguments[1], deadline: 20)) { result in
        switch result {
        case .success(let response): print("succeeded \(response.statusCode)")
        case .failure(let error): print("failed \(error)")
        }
        done.signal()
    }
    done.wait()
    exit(0)
case "trust" where arguments.count >= 4:
    trust(arguments[1], arguments[2], Array(arguments.dropFirst(3)))
case "starved" where arguments.count == 2 && ["deadline", "cancel"].contains(arguments[1]):
    starved(arguments[1])
case let url? where !["upload", "download", "race", "trust", "curl", "starved"].contains(url):
    let deadline = arguments.dropFirst().first.flatMap(TimeInterval.init) ?? 10
    run(Probe(url: url, deadline: deadline)) { response, _ in "succeeded \(response.statusCode)" }
default:
    FileHandle.standardError.write(
        Data(
            "usage: switchboard-probe <url> [timeout] | upload <url> <file> | download <url> <destination> | race <url> <timeout> <url> <timeout> | trust <system|extra|only> <ca file> <url>… | starved <deadline|cancel>\n"
                .utf8))
    exit(2)
}
