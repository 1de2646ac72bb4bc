import Foundation

/// Several images uploaded at once under one field name, with parameters: the shared client's
/// multi-image upload, as one request value.
///
/// ```swift
/// let upload = ImageUpload("/upload/images", images: [photo1, photo2], fieldName: "images",
///                          parameters: ["album": "holiday"], compressionQuality: 0.8)
/// Dispatcher.shared.send(upload) { result in … }
/// ```
///
/// Each image is checked by its leading bytes; an empty array, or an element that isn't a JPEG, PNG,
/// GIF, WebP or HEIC image, fails the send with ``NetworkError/invalidRequest(reason:)`` (naming the
/// element's index) before anything is sent. File names are built from the date and the index
/// (``MultipartFormData/defaultImageFileName(date:index:format:)``); each part's MIME type is its
/// image's. The parameters are form fields before the images.
public struct ImageUpload: Request {
    /// The path below the base URL, or an absolute URL.
    public let path: String
    /// The images' bytes, in order.
    public let images: [Data]
    /// The field name of every image.
    public let fieldName: String
    /// Form fields sent before the images (a JSON object).
    public let parameters: JSON?
    /// Between 0 and 1: re-encode each image as JPEG at this quality (Apple platforms, with ImageIO:
    /// written for, not built or tested in this project's CI; a no-op on Linux).
    public let compressionQuality: Double?
    /// `POST`, `PUT` or `PATCH`.
    public let method: HTTPMethod
    /// What the reply must be.
    public let validation: Validation
    /// The date in the file names: when the upload was made, unless set.
    public var date: Date

    /// Creates an upload.
    /// - Parameters:
    ///   - path: a path below the base URL, or an absolute URL.
    ///   - images: the images' bytes.
    ///   - fieldName: the field name of every image.
    ///   - parameters: a JSON object of form fields sent with the images.
    ///   - compressionQuality: JPEG quality for re-encoding (Apple platforms only: written for, not
    ///     built or tested in this project's CI).
    ///   - method: `POST` (default), `PUT` or `PATCH`.
    ///   - validation: what the reply must be.
    public init(
        _ path: String, images: [Data], fieldName: String = "images", parameters: JSON? = nil,
        compressionQuality: Double? = nil, method: HTTPMethod = .post, validation: Validation = .default
    ) {
        self.path = path
        self.images = images
        self.fieldName = fieldName
        self.parameters = parameters
        self.compressionQuality = compressionQuality
        self.method = method
        self.validation = validation
        date = Date()
    }

    /// The form: the images under ``fieldName`` (the parameters are added as fields when sent).
    public var body: RequestBody? {
        .multipart { form in
            form.appendImages(images, name: fieldName, compressionQuality: compressionQuality, date: date)
        }
    }
}

extension Dispatcher {
    /// Uploads images under one field name with parameters and hands back the reply's JSON: the shared
    /// client's multi-image upload in one call (see ``ImageUpload``). An empty array or an element
    /// that is not an image fails with ``NetworkError/invalidRequest(reason:)`` before anything is sent.
    /// - Parameters:
    ///   - images: the images' bytes.
    ///   - path: a path below the base URL, or an absolute URL.
    ///   - fieldName: the field name of every image.
    ///   - parameters: form fields sent with the images.
    ///   - compressionQuality: JPEG quality for re-encoding (Apple platforms only: written for, not
    ///     built or tested in this project's CI).
    ///   - progress: upload progress, on ``Configuration/callbackQueue``.
    ///   - completion: the reply's JSON or the error, once, on ``Configuration/callbackQueue``.
    /// - Returns: a handle to cancel the upload.
    @discardableResult
    public func uploadImages(
        _ images: [Data], to path: String, fieldName: String = "images", parameters: JSON? = nil,
        compressionQuality: Double? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: @escaping @Sendable (Result<JSON, NetworkError>) -> Void
    ) -> RequestHandle {
        let upload = ImageUpload(path, images: images, fieldName: fieldName, parameters: parameters, compressionQuality: compressionQuality)
        return send(upload, completionQueue: nil, progress: progress) { completion($0.map(\.json)) }
    }
}
