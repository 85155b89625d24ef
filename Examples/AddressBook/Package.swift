// swift-tools-version: 6.0
// An app-like use of Settee: a small address book that shows a view live
// while another task writes, and reloads its design document when it changes.
// Its own package, depending on Settee by path, so that building Settee itself
// (and its CI) does not build the example.
import PackageDescription

let package = Package(
    name: "AddressBook",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Settee", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "AddressBook",
            dependencies: [.product(name: "Settee", package: "Settee")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
