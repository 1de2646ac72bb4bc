import Foundation
import LoopbackServer
import Switchboard
import Testing

/// The multi-image upload: one field name, parameters as fields, names from the date and the index,
/// each image's own MIME type, and the bad inputs (an empty array, an element that isn't an image).
@Suite(hangGuard, admission) struct ImageUploadTests {
    static let jpeg = Data([0xFF, 0xD8, 0xFF, 0xDB]) + Data(repeating: 1, count: 1000)
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 2, count: 2000)
    static let webp = Data("RIFF".utf8) + Data([0, 0, 0, 0]) + Data("WEBPVP8 ".utf8) + Data(repeating: 3, count: 500)
    static let heic = Data([0, 0, 0, 0x18]) + Data("ftypheic".utf8) + Data(repeating: 4, count: 700)

    @Test(arguments: TransportUnderTest.network) func imagesGoUnderOneFieldWithDatedNamesTheirOwnTypesAndTheParameters(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let date = Date(timeIntervalSince1970: 1_780_000_000)  // 2026-05-28 UTC
            var upload = ImageUpload("/upload/echo", images: [Self.jpeg, Self.png, Self.webp, Self.heic], fieldName: "photos", parameters: ["album": "trip", "user": ["id": 5]])
            upload.date = date
            let parts = try await makeClient(server, on: kind).response(for: upload).json["parts"].array ?? []
            #expect(parts.map { $0["name"].string ?? "" } == ["album", "user[id]", "photos", "photos", "photos", "photos"])
            #expect(parts.prefix(2).map { $0["value"].string ?? "" } == ["trip", "5"])
            #expect(parts.dropFirst(2).map { $0["filename"].string ?? "" } == ["2026-05-28-0.jpg", "2026-05-28-1.png", "2026-05-28-2.webp", "2026-05-28-3.heic"])
            #expect(parts.dropFirst(2).map { $0["contentType"].string ?? "" } == ["image/jpeg", "image/png", "image/webp", "image/heic"])
            #expect(parts.dropFirst(2).map { $0["checksum"].string ?? "" } == [Self.jpeg, Self.png, Self.webp, Self.heic].map(Checksum.of))
        }
    }

    @Test(arguments: TransportUnderTest.network) func theOneCallFormAnswersWithTheRepliesJSON(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let progress = Locked([TransferProgress]())
            let result = await completion { done in
                client.uploadImages(
                    [Self.png, Self.jpeg], to: "/upload/images", parameters: ["album": "a"], compressionQuality: 0.5,
                    progress: { value in
                        progress.withLock { $0.append(value) }
                    },
                    completion: done)
            }
            let json = try result.get()
            #expect(json["count"] == 2 && json["fields"]["album"] == "a")
            // Re-encoding is an Apple-platform feature; elsewhere the bytes go as they are.
            #if !canImport(ImageIO)
            #expect(json["files"].array?.map { $0["size"].int } == [Self.png.count, Self.jpeg.count])
            #endif
            let last = progress.withLock { $0.last }
            #expect(last != nil && last?.bytesSent == last?.expectedBytesToSend)
        }
    }

    @Test(arguments: TransportUnderTest.network) func anEmptyArrayOrAnElementThatIsNotAnImageFailsBeforeSendingNamingTheIndex(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let empty = await client.result(ImageUpload("/upload/echo", images: [])).failure
            #expect(empty?.invalidReason?.contains("array of images is empty") == true, "\(String(describing: empty))")
            let text = Data("GIF8".utf8)  // too short to be a GIF
            let mixed = await client.result(ImageUpload("/upload/echo", images: [Self.jpeg, Self.png, text])).failure
            #expect(mixed?.invalidReason?.contains("images[2] is not a JPEG, PNG, GIF, WebP or HEIC image") == true, "\(String(describing: mixed))")
            #expect(server.totalRequests == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network, [HTTPMethod.put, .patch])
    func anUploadMayBeAPutOrAPatch(_ kind: TransportUnderTest, _ method: HTTPMethod) async throws {
        try await withServer { server in
            let response = try await makeClient(server, on: kind).response(for: ImageUpload("/upload/echo", images: [Self.png], method: method))
            #expect(response.json["parts"][0]["checksum"].string == Checksum.of(Self.png))
        }
    }
}
