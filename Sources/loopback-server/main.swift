import Foundation
import LoopbackServer
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

// Runs the standard loopback server as its own process: `loopback-server [--port N]`.
// Prints `listening on http://127.0.0.1:PORT`, then serves until killed.

var port: UInt16 = 0
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--port":
        guard let text = arguments.popFirst(), let value = UInt16(text) else {
            FileHandle.standardError.write(Data("--port needs a number from 0 to 65535\n".utf8))
            exit(2)
        }
        port = value
    case "-h", "--help":
        print("usage: loopback-server [--port N]   (0 or no port = ephemeral)")
        exit(0)
    default:
        FileHandle.standardError.write(Data("unknown argument \(argument)\nusage: loopback-server [--port N]\n".utf8))
        exit(2)
    }
}

signal(SIGPIPE, SIG_IGN)
// A parent that spawns us from a thread with signals blocked (libdispatch's threads block them) passes
// that mask on; unblock everything so SIGTERM and SIGINT end the server.
var noSignals = sigset_t()
sigemptyset(&noSignals)
sigprocmask(SIG_SETMASK, &noSignals, nil)
do {
    let server = try LoopbackServer.standard(port: port)
    print("listening on \(server.baseURL.absoluteString)")
    fflush(nil)  // flush every stream (naming `stdout` is not concurrency-safe in Swift 6)
    while true { sleep(3600) }
} catch {
    FileHandle.standardError.write(Data("loopback-server: \(error)\n".utf8))
    exit(1)
}
