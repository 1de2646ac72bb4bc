import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 6 — validate status and content type: first the status (so a 500 with an HTML page reports
/// its status and body, never a decoding error), then, for a JSON response with a body, the media type
/// (the last of several `Content-Type` values, as browsers read it; see ``MediaType``).
enum StatusStage {
    /// The failure for a status outside `statusCodes` (``NetworkError/unauthorized(_:)`` for a 401,
    /// ``NetworkError/httpStatus(_:)`` otherwise), or for a media type outside `contentTypes` (not
    /// checked when `nil`); `nil` when the response passes.
    static func check(_ response: TransportResponse, statusCodes: StatusCodes, contentTypes: Set<String>?) -> NetworkError? {
        let head = response.head
        let status = head.statusCode
        guard statusCodes.contains(status) else {
            let failure = ErrorResponse(head.response, body: response.data)
            return status == 401 ? .unauthorized(failure) : .httpStatus(failure)
        }
        if let contentTypes {
            let mime = head.mimeType
            guard MediaType.isAcceptable(mime, in: contentTypes) else {
                return .unacceptableContentType(received: mime, acceptable: contentTypes, response: ErrorResponse(head.response, body: response.data))
            }
        }
        return nil
    }
}
