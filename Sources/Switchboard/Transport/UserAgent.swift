import Foundation

/// The `User-Agent` every transport of the package sends when a request has none of its own:
/// `<app name>/<app version> Switchboard/<library version>`, as in `Reader/2.1 Switchboard/0.1.0`.
///
/// The app's name is the main bundle's `CFBundleName`, else the executable's name; its version is
/// `CFBundleShortVersionString`. Either is `unknown` when absent. Characters that can't appear in a
/// product token (RFC 9110 §10.1.5: spaces, `/`, `(`, quotes, anything outside ASCII) become `-`.
/// A request's own `User-Agent` (from ``Request/headers``, ``Configuration/defaultHeaders`` or an
/// adapter) wins; an empty one is sent empty.
public enum UserAgent {
    /// Switchboard's version, as CHANGELOG.md names it.
    public static let libraryVersion = "0.1.0"

    /// The default value, worked out once.
    public static let `default`: String = make(
        appName: Bundle.main.object(forInfoDictionaryKey: "CFBundleName") as? String ?? ProcessInfo.processInfo.processName,
        appVersion: Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String)

    /// `<appName>/<appVersion> Switchboard/<libraryVersion>`, each part made a token.
    package static func make(appName: String?, appVersion: String?) -> String {
        "\(token(appName))/\(token(appVersion)) Switchboard/\(libraryVersion)"
    }

    /// `text` with every byte that isn't a token character replaced by `-`; `unknown` when empty.
    package static func token(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "unknown" }
        let punctuation = Set("!#$%&'*+-.^_`|~".utf8)
        let bytes = text.unicodeScalars.map { scalar -> UInt8 in
            guard scalar.isASCII else { return UInt8(ascii: "-") }
            let byte = UInt8(scalar.value)
            let isToken = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || punctuation.contains(byte)
            return isToken ? byte : UInt8(ascii: "-")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
