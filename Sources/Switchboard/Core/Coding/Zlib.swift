#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// zlib, loaded at run time with `dlopen` (`libz.so.1` on Linux, `libz.1.dylib` on Apple platforms,
/// where it is part of the system): gzip compression of request bodies with no package dependency and
/// nothing needed at build time. Only the Linux path is built and tested in CI.
///
/// A `z_stream` is used through its C layout on 64-bit platforms (LP64: pointers and `uLong` 8 bytes,
/// `uInt` and `int` 4), the only ones Switchboard builds for; elsewhere zlib is not loaded.
///
/// `@unchecked Sendable`: every stored property is an immutable C function pointer, set once in `init`;
/// zlib's functions are thread-safe on distinct streams, and each call here makes its own.
package final class Zlib: @unchecked Sendable {
    private typealias DeflateInit = @convention(c) (UnsafeMutableRawPointer?, Int32, Int32, Int32, Int32, Int32, UnsafePointer<CChar>?, Int32) -> Int32
    private typealias InflateInit = @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, Int32) -> Int32
    private typealias Step = @convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32
    private typealias End = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    private typealias Bound = @convention(c) (UnsafeMutableRawPointer?, UInt) -> UInt

    private let version: UnsafePointer<CChar>
    private let deflateInit: DeflateInit
    private let deflateStep: Step
    private let deflateEnd: End
    private let deflateBound: Bound
    private let inflateInit: InflateInit
    private let inflateStep: Step
    private let inflateEnd: End

    /// The library, loaded once per process; or why it can't be.
    package static let shared: Result<Zlib, NetworkError> = Result { () throws(NetworkError) in try Zlib(libraryNames: defaultNames) }

    #if canImport(Darwin)
    static let defaultNames = ["/usr/lib/libz.1.dylib", "libz.1.dylib", "libz.dylib"]
    #else
    static let defaultNames = ["libz.so.1", "libz.so"]
    #endif

    /// `z_stream`'s size and field offsets on LP64.
    private enum Stream {
        static let size = 112
        static let nextIn = 0, availIn = 8, nextOut = 24, availOut = 32, totalOut = 40, message = 48
    }

    /// Loads the first of `names` that loads (tests give names that don't).
    init(libraryNames names: [String]) throws(NetworkError) {
        guard MemoryLayout<Int>.size == 8 else { throw Self.unavailable("zlib is used only on 64-bit platforms") }
        var library: UnsafeMutableRawPointer?
        for name in names {
            library = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            if library != nil { break }
        }
        guard let library else {
            throw Self.unavailable("\(names.first ?? "libz") could not be loaded (\(dlerror().map { String(cString: $0) } ?? "not found"))")
        }
        func symbol<T>(_ name: String, _ type: T.Type) throws(NetworkError) -> T {
            guard let address = dlsym(library, name) else { throw Self.unavailable("zlib has no \(name)") }
            return unsafeBitCast(address, to: type)
        }
        let zlibVersion = try symbol("zlibVersion", (@convention(c) () -> UnsafePointer<CChar>?).self)
        guard let version = zlibVersion(), version.pointee == UInt8(ascii: "1") else { throw Self.unavailable("zlib is not version 1.x") }
        self.version = version
        deflateInit = try symbol("deflateInit2_", DeflateInit.self)
        deflateStep = try symbol("deflate", Step.self)
        deflateEnd = try symbol("deflateEnd", End.self)
        deflateBound = try symbol("deflateBound", Bound.self)
        inflateInit = try symbol("inflateInit2_", InflateInit.self)
        inflateStep = try symbol("inflate", Step.self)
        inflateEnd = try symbol("inflateEnd", End.self)
    }

    private static func unavailable(_ reason: String) -> NetworkError {
        .invalidRequest(reason: "gzip compression needs zlib: \(reason)")
    }

    /// `data` as one gzip stream (RFC 1952) at `level` (0–9).
    package func gzip(_ data: Data, level: Int) throws(NetworkError) -> Data {
        guard data.count <= Int(UInt32.max) else { throw .invalidRequest(reason: "a body over 4 GiB is not compressed in memory") }
        let stream = UnsafeMutableRawPointer.allocate(byteCount: Stream.size, alignment: 8)
        stream.initializeMemory(as: UInt8.self, repeating: 0, count: Stream.size)
        defer { stream.deallocate() }
        // Deflate, window 15 bits + 16 for the gzip wrapper, memory level 8, the default strategy.
        // A negative level is zlib's default (Z_DEFAULT_COMPRESSION, 6).
        let started = deflateInit(stream, level < 0 ? -1 : Int32(min(9, level)), 8, 15 + 16, 8, 0, version, Int32(Stream.size))
        guard started == 0 else { throw .invalidRequest(reason: "zlib's deflateInit2_ failed (\(started))") }
        defer { _ = deflateEnd(stream) }
        let capacity = Int(deflateBound(stream, UInt(data.count)))
        guard capacity <= Int(UInt32.max) else { throw .invalidRequest(reason: "a body this large is not compressed in memory") }
        var output = Data(count: capacity)
        let finished = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.storeBytes(of: input.baseAddress, toByteOffset: Stream.nextIn, as: UnsafeRawPointer?.self)
                stream.storeBytes(of: UInt32(input.count), toByteOffset: Stream.availIn, as: UInt32.self)
                stream.storeBytes(of: out.baseAddress, toByteOffset: Stream.nextOut, as: UnsafeMutableRawPointer?.self)
                stream.storeBytes(of: UInt32(out.count), toByteOffset: Stream.availOut, as: UInt32.self)
                return deflateStep(stream, 4)  // Z_FINISH: one call suffices with deflateBound's room
            }
        }
        guard finished == 1 else { throw .invalidRequest(reason: "zlib's deflate failed (\(finished))\(message(stream))") }
        output.count = Int(stream.load(fromByteOffset: Stream.totalOut, as: UInt.self))
        return output
    }

    /// The bytes a gzip (or zlib) stream decodes to, at most `limit` of them; `nil` when the stream is
    /// damaged, truncated or decodes to more.
    package func gunzip(_ data: Data, limit: Int) -> Data? {
        let stream = UnsafeMutableRawPointer.allocate(byteCount: Stream.size, alignment: 8)
        stream.initializeMemory(as: UInt8.self, repeating: 0, count: Stream.size)
        defer { stream.deallocate() }
        // Window 15 bits + 32: a gzip or a zlib header, detected.
        guard inflateInit(stream, 15 + 32, version, Int32(Stream.size)) == 0 else { return nil }
        defer { _ = inflateEnd(stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        let ended: Bool = data.withUnsafeBytes { input in
            stream.storeBytes(of: input.baseAddress, toByteOffset: Stream.nextIn, as: UnsafeRawPointer?.self)
            stream.storeBytes(of: UInt32(clamping: input.count), toByteOffset: Stream.availIn, as: UInt32.self)
            while true {
                let status = chunk.withUnsafeMutableBytes { out -> Int32 in
                    stream.storeBytes(of: out.baseAddress, toByteOffset: Stream.nextOut, as: UnsafeMutableRawPointer?.self)
                    stream.storeBytes(of: UInt32(out.count), toByteOffset: Stream.availOut, as: UInt32.self)
                    return inflateStep(stream, 0)
                }
                let produced = chunk.count - Int(stream.load(fromByteOffset: Stream.availOut, as: UInt32.self))
                output.append(contentsOf: chunk[0..<produced])
                if output.count > limit { return false }
                if status == 1 { return true }  // Z_STREAM_END
                // Z_OK with no progress possible means the input ended early.
                guard status == 0, produced > 0 || stream.load(fromByteOffset: Stream.availIn, as: UInt32.self) > 0 else { return false }
            }
        }
        return ended ? output : nil
    }

    private func message(_ stream: UnsafeMutableRawPointer) -> String {
        stream.load(fromByteOffset: Stream.message, as: UnsafePointer<CChar>?.self).map { ": " + String(cString: $0) } ?? ""
    }
}
