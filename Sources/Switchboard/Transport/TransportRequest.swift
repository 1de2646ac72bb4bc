import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a transport sends and where the response body goes.
public struct TransportRequest: Sendable {
    /// The head: method, URL, headers and the request's settings. Its `httpBody` and `httpBodyStream`
    /// are not sent; the body is ``body``.
    public var urlRequest: URLRequest {
        // Another request (a wrapping transport's), or this one changed: assigned again to be sure.
        didSet { timeoutIntervalIsSet = false }
    }
    /// The body.
    public var body: TransferBody
    /// Where the response body goes.
    public var destination: ResponseDestination
    /// The request a ``Dispatcher`` sends with this transfer (a stub answers by its type); `nil` for a
    /// transfer started on a transport directly. With coalescing, the first of the identical sends.
    public var origin: (any Request)?
    /// Whether `urlRequest.timeoutInterval` is known to have been assigned after the request was made
    /// (set by stages 4 and 5 for a request the builder made, reset by any change to `urlRequest`):
    /// FoundationNetworking applies a request's `timeoutInterval` only then (a flag the setter sets,
    /// kept by copies; `URLRequest(url:timeoutInterval:)` leaves it unset), so the URLSession transport
    /// needn't assign an equal value again (which copies the request on Linux).
    var timeoutIntervalIsSet = false

    /// Creates a transport request.
    /// - Parameters:
    ///   - urlRequest: the head; with `body` `nil`, its `httpBody` (if any) is the body.
    ///   - body: the body; `nil` takes `urlRequest.httpBody`.
    ///   - destination: memory (the default) or a file.
    ///   - origin: the request this transfer sends, if any.
    public init(_ urlRequest: URLRequest, body: TransferBody? = nil, destination: ResponseDestination = .memory, origin: (any Request)? = nil) {
        // Not stripped of its `httpBody`: a copy of a URLRequest on Linux copies the whole request.
        self.urlRequest = urlRequest
        self.body = body ?? urlRequest.httpBody.map(TransferBody.data) ?? .none
        self.destination = destination
        self.origin = origin
    }
}

/// A request body as a transport sends it.
public enum TransferBody: Sendable {
    /// No body.
    case none
    /// Bytes in memory.
    case data(Data)
    /// A file's contents, read as they are sent (memory stays bounded whatever the size). Sent with a
    /// `Content-Length` of the file's size.
    case file(URL)
    /// A stream of `length` bytes. `open` is called for each time the body is sent (again after a
    /// 307/308 redirect or a challenge), so it must return a fresh stream each time. ``URLSessionTransport``
    /// on Linux sends it chunked, without a `Content-Length` (FoundationNetworking would send both).
    case stream(length: Int64, open: @Sendable () throws -> InputStream)

    /// The body's size when known before sending (a file's from the file system).
    public var length: Int64? {
        switch self {
        case .none: 0
        case .data(let data): Int64(data.count)
        case .file(let url): (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
        case .stream(let length, _): length
        }
    }

    /// Opens a stream body's stream, open for reading, for a transport to send.
    /// - Throws: ``NetworkError/invalidRequest(reason:)`` when `open` fails.
    public static func openStream(_ open: @Sendable () throws -> InputStream) throws(NetworkError) -> InputStream {
        let stream: InputStream
        do {
            stream = try open()
        } catch {
            throw .invalidRequest(reason: "the body stream could not be opened: \(error)")
        }
        stream.open()
        return stream
    }

    /// Whether there are bytes to send.
    var isEmpty: Bool {
        switch self {
        case .none: true
        case .data(let data): data.isEmpty
        case .file, .stream: false
        }
    }
}

/// Where a response body goes.
public enum ResponseDestination: Sendable, Hashable {
    /// Into memory, up to ``TransferOptions/maximumResponseSize`` (``TransportResponse/data``).
    case memory
    /// Into the file at `url`, written as it arrives (memory stays bounded), starting at byte `offset`:
    /// the file is cut to `offset` bytes first, so 0 replaces it and the size of a partial download
    /// appends to it (a resumed download). ``TransferOptions/maximumResponseSize`` does not apply.
    /// The head callback may answer ``HeadDecision/writeFromStart`` to write from byte 0 instead (the
    /// server ignored a `Range` and sent the whole body).
    case file(URL, offset: Int64 = 0)
}

/// What a transport does after the final response head arrived, as the head callback decides.
public enum HeadDecision: Sendable {
    /// Receive the body as the request said.
    case proceed
    /// Receive the body into the destination file from byte 0, not from its offset.
    case writeFromStart
    /// Don't receive the body: the transfer ends with this error.
    case fail(NetworkError)
}

/// What a transport reports while a transfer runs, and how it ends. The transport calls them on a
/// queue of its own, one at a time: `head` once per final response (before its body), `progress` as
/// bytes move, then `completion` exactly once, as the last call.
public struct TransferCallbacks: Sendable {
    /// The final response head, before its body (not for a redirect or a challenge the transport follows).
    public var head: (@Sendable (HTTPURLResponse) -> HeadDecision)?
    /// Bytes sent and received so far.
    public var progress: (@Sendable (TransferProgress) -> Void)?
    /// The end: the response, or the error.
    public var completion: @Sendable (Result<TransportResponse, NetworkError>) -> Void

    /// Creates callbacks.
    public init(
        head: (@Sendable (HTTPURLResponse) -> HeadDecision)? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: @escaping @Sendable (Result<TransportResponse, NetworkError>) -> Void
    ) {
        self.head = head
        self.progress = progress
        self.completion = completion
    }
}

extension TransferCallbacks {
    /// These callbacks, counted in `open` from now until the completion has returned: how a transport
    /// tells the package's tests that no callback of its transfers can come any more.
    func counted(in open: Locked<Int>) -> TransferCallbacks {
        open.withLock { $0 += 1 }
        var counted = self
        let completion = self.completion
        counted.completion = { result in
            completion(result)
            open.withLock { $0 -= 1 }
        }
        return counted
    }
}
