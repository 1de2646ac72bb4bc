// swift-tools-version:6.0
import PackageDescription

/// Settings every target shares: Swift 6 language mode (strict concurrency) and `any` spelled out.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

var package = Package(
    name: "Switchboard",
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "Switchboard", targets: ["Switchboard"]),
        .library(name: "SwitchboardTesting", targets: ["SwitchboardTesting"]),
        .executable(name: "Demo", targets: ["Demo"]),
        .executable(name: "loopback-server", targets: ["loopback-server"]),
        .executable(name: "switchboard-bench", targets: ["switchboard-bench"]),
        .executable(name: "switchboard-probe", targets: ["switchboard-probe"]),
    ],
    targets: [
        .target(name: "CSwitchboardAtomics"),
        .target(name: "Switchboard", dependencies: ["CSwitchboardAtomics"]),
        .target(name: "SwitchboardTesting", dependencies: ["Switchboard"]),
        // The server reads gzipped request bodies with the library's zlib loader (a `package` symbol).
        .target(name: "LoopbackServer", dependencies: ["Switchboard"]),
        .executableTarget(name: "loopback-server", dependencies: ["LoopbackServer"]),
        .executableTarget(name: "Demo", dependencies: ["Switchboard", "LoopbackServer"], path: "Demo"),
        .executableTarget(name: "switchboard-probe", dependencies: ["Switchboard"]),
        // CClient/curl_client.c is the bench's C baseline, compiled by the bench when it runs, not here.
        .executableTarget(name: "switchboard-bench", dependencies: ["Switchboard", "LoopbackServer", "CSwitchboardAtomics"], exclude: ["CClient"]),
        .testTarget(
            name: "SwitchboardTests",
            dependencies: ["Switchboard", "SwitchboardTesting", "LoopbackServer", "Demo"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.name != "CSwitchboardAtomics" {
    target.swiftSettings = (target.swiftSettings ?? []) + strictSettings
}
