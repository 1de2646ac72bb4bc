// swift-tools-version:6.0
import PackageDescription

/// Settings every target shares: Swift 6 language mode (strict concurrency) and `any` spelled out.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

var package = Package(
    name: "Switchboard",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "Switchboard", targets: ["Switchboard"]),
        .library(name: "SwitchboardTesting", targets: ["SwitchboardTesting"]),
        .executable(name: "Demo", targets: ["Demo"]),
        .executable(name: "loopback-server", targets: ["loopback-server"]),
        .executable(name: "switchboard-bench", targets: ["switchboard-bench"]),
    ],
    targets: [
        .target(name: "Switchboard"),
        .target(name: "SwitchboardTesting", dependencies: ["Switchboard"]),
        .target(name: "LoopbackServer"),
        .executableTarget(name: "loopback-server", dependencies: ["LoopbackServer"]),
        .executableTarget(name: "Demo", dependencies: ["Switchboard", "LoopbackServer"], path: "Demo"),
        .executableTarget(name: "switchboard-bench", dependencies: ["Switchboard", "LoopbackServer"]),
        .testTarget(
            name: "SwitchboardTests",
            dependencies: ["Switchboard", "SwitchboardTesting", "LoopbackServer", "Demo"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + strictSettings
}
