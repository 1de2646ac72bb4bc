import Foundation
import Switchboard

/// Uploads (YTKNetwork's image upload, the shared client's multi-image upload) and a resumed download.
enum TransferScenarios {
    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "Upload an image in a multipart body; the reply must carry an imageId (constructingBodyBlock + jsonValidator)") { transcript in
            let sent = Locked(Int64(0))
            let result = await completion { done in
                Dispatcher.shared.send(
                    UploadImage(jpeg: SampleImages.jpeg),
                    progress: { progress in
                        sent.withLock { $0 = progress.bytesSent }
                    },
                    completion: done)
            }
            switch result {
            case .success(let response):
                let json = response.json
                transcript.say(
                    "  imageId \(json["imageId"].string ?? "-"), \(json["size"].int ?? 0) bytes as \(json["fileName"].string ?? "-") (\(json["contentType"].string ?? "-")); \(sent.withLock { $0 }) body bytes sent"
                )
                transcript.check(
                    json["size"].int == SampleImages.jpeg.count && json["contentType"] == "image/jpeg", "the image arrived whole, and the validator accepted the reply")
            case .failure(let error):
                transcript.check(false, "the upload failed: \(error)")
            }
        },
        DemoRunner.Scenario(title: "Several images at once with parameters (the shared client's multi-image upload)") { transcript in
            let images = [SampleImages.jpeg, SampleImages.png, SampleImages.gif]
            let result = await completion { done in
                Dispatcher.shared.uploadImages(
                    images, to: "/upload/images", fieldName: "images", parameters: ["album": "demo", "user": "123"], compressionQuality: 0.8, completion: done)
            }
            switch result {
            case .success(let json):
                let files = json["files"].array ?? []
                for file in files {
                    transcript.say("  \(file["fileName"].string ?? "-"): \(file["size"].int ?? 0) bytes, \(file["contentType"].string ?? "-")")
                }
                transcript.say("  fields: album=\(json["fields"]["album"].string ?? "-"), user=\(json["fields"]["user"].string ?? "-")")
                let types = files.compactMap { $0["contentType"].string }
                transcript.check(
                    json["count"] == 3 && types == ["image/jpeg", "image/png", "image/gif"], "three images, each with its own MIME type, and the parameters as fields")
            case .failure(let error):
                transcript.check(false, "the upload failed: \(error)")
            }
            for (label, bad) in [("an empty array", [Data]()), ("a text file among the images", [SampleImages.png, Data("not an image".utf8)])] {
                let failed = await completion { Dispatcher.shared.uploadImages(bad, to: "/upload/images", completion: $0) }
                let reason = failed.failure.map { "\($0)" } ?? "no error"
                transcript.check(failed.failure?.statusCode == nil && reason.contains("invalid request"), "\(label) fails before sending: \(reason)")
            }
        },
        DemoRunner.Scenario(title: "A download cut off midway, then resumed where it stopped (Range + If-Range)") { transcript in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-demo-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            Dispatcher.shared.updateConfiguration { $0.partialDownloadsDirectory = folder.appendingPathComponent("partials") }
            defer { Dispatcher.shared.updateConfiguration { $0.partialDownloadsDirectory = Configuration.defaultPartialDownloadsDirectory } }
            let destination = folder.appendingPathComponent("demo.bin")
            _ = await outcome(of: CommonRequest(path: "/files/demo.bin/cut?at=3145728", method: .post))
            let bar = ProgressBar(transcript: transcript)
            let first = await download(destination, bar: bar)
            transcript.say("  first attempt: \(first.failure.map { "\($0)" } ?? "finished?")")
            let second = await download(destination, bar: bar)
            switch second {
            case .success(let response):
                let size = (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? NSNumber)?.intValue ?? 0
                transcript.say("  second attempt: HTTP \(response.statusCode), \(size) bytes in \(response.fileURL?.lastPathComponent ?? "-")")
                transcript.check(first.failure != nil && response.statusCode == 206 && size == 8 << 20, "the second attempt asked only for the rest, and the file is whole")
            case .failure(let error):
                transcript.check(false, "the resumed download failed: \(error)")
            }
        },
    ]

    private static func download(_ destination: URL, bar: ProgressBar) async -> Result<Response<Download>, NetworkError> {
        await completion { Dispatcher.shared.download(Download("/files/demo.bin", to: destination), progress: { bar.show($0) }, completion: $0) }
    }
}

/// A text progress bar in the transcript: a line each time another tenth of the file has arrived.
final class ProgressBar: Sendable {
    private let transcript: Transcript
    private let shown = Locked(-1)

    init(transcript: Transcript) {
        self.transcript = transcript
    }

    func show(_ progress: TransferProgress) {
        guard let fraction = progress.fractionReceived else { return }
        let tenths = Int(fraction * 10)
        let draw = shown.withLock { shown -> Bool in
            guard tenths != shown else { return false }
            shown = tenths
            return true
        }
        if draw {
            transcript.say("  [" + String(repeating: "#", count: tenths) + String(repeating: ".", count: 10 - tenths) + "] \(tenths * 10)% (\(progress.bytesReceived >> 10) KiB)")
        }
    }
}
