import Dispatch
import Foundation
import Switchboard

/// `switchboard-probe <url> [timeout]`: sends one GET with a `Dispatcher` and prints its outcome, one
/// line: `succeeded <status>` or `failed <error>`. Exits 0 either way; a crash of the process is the
/// outcome the fault suite runs it for: cases where the platform's URLSession kills the process that
/// meets them (a status line, then close) are run here, in a child process, so the suite survives them.

struct Probe: Request {
    let url: String
    let deadline: TimeInterval
    var path: String { url }
    var timeout: TimeInterval? { deadline }
    var responseFormat: ResponseFormat { .data }
    var validation: Validation { Validation(statusCodes: StatusCodes(100..<600)) }
}

let arguments = CommandLine.arguments.dropFirst()
guard let url = arguments.first else {
    FileHandle.standardError.write(Data("usage: switchboard-probe <url> [timeout seconds]\n".utf8))
    exit(2)
}
let deadline = arguments.dropFirst().first.flatMap(TimeInterval.init) ?? 10
let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
let done = DispatchSemaphore(value: 0)
client.send(Probe(url: url, deadline: deadline)) { result in
    switch result {
    case .success(let response): print("succeeded \(response.statusCode)")
    case .failure(let error): print("failed \(error)")
    }
    done.signal()
}
done.wait()
exit(0)
