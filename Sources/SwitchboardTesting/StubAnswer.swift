import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension StubTransport {
    /// A canned answer: a response (status, headers, body) or a transport error, after an optional delay.
    public struct Answer: Sendable {
        /// The status code.
        public var status: Int
        /// The response headers.
        public var headers: [String: String]
        /// The body.
        public var body: Data
        /// How long to wait before answering, in seconds (a cancel or the request's deadline may come first).
        public var delay: TimeInterval
        /// When set, the transfer fails with this error instead of answering (a dropped connection,
        /// `.transport(URLError(.notConnectedToInternet))`).
        public var failure: NetworkError?

        /// Creates an answer.
        public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data(), delay: TimeInterval = 0) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
        }

        /// A JSON answer (`Content-Type: application/json`).
        public static func json(_ value: JSON, status: Int = 200, headers: [String: String] = [:], delay: TimeInterval = 0) -> Answer {
            Answer(status: status, headers: headers.merging(["Content-Type": "application/json"]) { mine, _ in mine }, body: value.serialized(), delay: delay)
        }

        /// A body as it is, with its content type.
        public static func data(_ body: Data, contentType: String, status: Int = 200, delay: TimeInterval = 0) -> Answer {
            Answer(status: status, headers: ["Content-Type": contentType], body: body, delay: delay)
        }

        /// An empty answer with a status code.
        public static func status(_ code: Int, headers: [String: String] = [:], delay: TimeInterval = 0) -> Answer {
            Answer(status: code, headers: headers, delay: delay)
        }

        /// A transfer that fails with `error` (after `delay`), as a network failure would.
        public static func failure(_ error: NetworkError, delay: TimeInterval = 0) -> Answer {
            var answer = Answer(delay: delay)
            answer.failure = error
            return answer
        }

        /// The same answer, `seconds` later.
        public func delayed(by seconds: TimeInterval) -> Answer {
            var answer = self
            answer.delay = seconds
            return answer
        }
    }

    /// A request the stub received, with the Switchboard request it came from.
    public struct Recorded: Sendable {
        /// The request as it left the pipeline (its `httpBody` holds the body, whatever its kind).
        public let urlRequest: URLRequest
        /// The Switchboard request, when a ``Dispatcher`` sent it.
        public let origin: (any Request)?
        /// When the stub received it.
        public let date: Date

        /// The URL.
        public var url: URL? { urlRequest.url }
        /// The method (`GET`).
        public var method: String { urlRequest.httpMethod ?? "GET" }
        /// A header field's value (names compared without case).
        public func header(_ name: String) -> String? { urlRequest.value(forHTTPHeaderField: name) }
        /// The body.
        public var body: Data? { urlRequest.httpBody }
        /// The body, decoded as JSON.
        public var json: JSON? { body.flatMap { try? JSON.parse($0) } }
    }
}
