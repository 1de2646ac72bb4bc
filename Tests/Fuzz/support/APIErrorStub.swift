// Stand-in for `APIError` (Sources/Switchboard/Interceptors/ResponseHook.swift), which NetworkError
// names in its `.api` case. The real file needs `Request`, and `Request` needs `Configuration` and with
// it most of the module; these harnesses never build an `.api` error, so this copy of the stored
// properties and `description` is all that is needed.
import Foundation

public struct APIError: Sendable, CustomStringConvertible {
    public let code: JSON
    public let message: String?
    public let response: ErrorResponse

    public init(code: JSON, message: String?, response: ErrorResponse) {
        self.code = code
        self.message = message
        self.response = response
    }

    public var description: String { "API error \(code)" + (message.map { ": \($0)" } ?? "") }
}
