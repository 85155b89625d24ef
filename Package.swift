// swift-tools-version: 6.0
import PackageDescription

/// Every Swift target's settings: existentials spelt `any`, members visible
/// only through the modules a file imports, imports internal unless a file
/// says `public import`.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Settee",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Settee", targets: ["Settee"]),
        .library(name: "SetteeServer", targets: ["SetteeServer"]),
        .library(name: "SetteeReplication", targets: ["SetteeReplication"]),
        .executable(name: "settee", targets: ["SetteeCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // `settee serve`: CouchDB's HTTP API, on SwiftNIO. Only SetteeServer links it.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // Hummingbird's own SwiftNIO: the server reads connections (NIOCore) and HTTP/1 parse errors (NIOHTTP1).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        // Hummingbird's own HTTP types for SwiftNIO (the header timeout reads their request parts).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        // Hummingbird's own service lifecycle: `SetteeServer.stop()` shuts its group down gracefully.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // Settee's replicator speaks to CouchDB servers over HTTP. Only SetteeReplication links it.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // `swift package generate-documentation` (`make docs`); a plugin, not linked.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // LMDB, from Debian's liblmdb-dev. Prefixed so it cannot clash with other LMDB wrappers.
        .systemLibrary(
            name: "CSetteeLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // LMDB's page-walking calls behind a guard: a damaged page answers
        // MDB_CORRUPTED where LMDB would abort or fault.
        .target(name: "CSetteeLMDBGuard", dependencies: ["CSetteeLMDB"]),
        // zlib, from Debian's zlib1g-dev: gzip request bodies and attachments.
        .systemLibrary(
            name: "CSetteeZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // ICU's root collator (Debian's libicu-dev) behind a plain C header: Swift
        // must not see ICU's headers, which clash with the copy Foundation carries.
        .target(
            name: "CSetteeCollation",
            linkerSettings: [.linkedLibrary("icui18n"), .linkedLibrary("icuuc")]
        ),
        // The SpiderMonkey 102 shim: C++17 inside, a plain C header outside.
        // `mozjs-102` is a symlink to /usr/include/mozjs-102 (Debian's libmozjs-102-dev):
        // a header search path keeps the package free of unsafe flags, so it stays
        // usable as a dependency of other packages.
        .target(
            name: "CSetteeJS",
            exclude: ["mozjs-102"],
            cxxSettings: [.headerSearchPath("mozjs-102")],
            linkerSettings: [.linkedLibrary("mozjs-102"), .linkedLibrary("m"), .linkedLibrary("pthread")]
        ),
        // JSON values, the JSON lexer, parser and writer, CouchDB's collation,
        // hashing, gzip, the error vocabulary, Erlang's terms (external format, size, order).
        .target(name: "SetteeCore", dependencies: ["CSetteeCollation", "CSetteeZlib"]),
        // LMDB environments and tables, the document store, revisions and changes.
        .target(
            name: "SetteeStorage",
            dependencies: ["SetteeCore", "CSetteeLMDB", "CSetteeLMDBGuard", .product(name: "Logging", package: "swift-log")]
        ),
        // The embedded JavaScript engine: workers, their pool, contexts.
        .target(
            name: "SetteeJavaScript",
            dependencies: ["SetteeCore", "CSetteeJS"]
        ),
        // Views: index rows and their storage, the indexing pipeline, stored
        // reductions, built-in reducers, query options and the query runner
        // (CouchDB's collation is SetteeCore's).
        .target(
            name: "SetteeViews",
            dependencies: [
                "SetteeCore", "SetteeStorage",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `find`: CouchDB's Mango selectors, JSON and array indexes, the query planner.
        .target(
            name: "SetteeFind",
            dependencies: ["SetteeCore", "SetteeStorage", "SetteeViews"]
        ),
        // The library: `Database`, its async and Codable forms, live queries, watching.
        .target(
            name: "Settee",
            dependencies: [
                "SetteeCore", "SetteeStorage", "SetteeJavaScript", "SetteeViews", "SetteeFind",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // CouchDB's replication protocol between local databases and CouchDB
        // servers: `Replicator`, `settee replicate`, `/_replicate`.
        .target(
            name: "SetteeReplication",
            dependencies: [
                "Settee", "SetteeCore", "SetteeStorage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `settee couchjs`: CouchDB's query-server protocol on the JavaScript engine.
        .target(
            name: "SetteeQueryServer",
            dependencies: ["SetteeCore", "SetteeJavaScript", "CSetteeJS", .product(name: "Logging", package: "swift-log")]
        ),
        // `settee serve`: CouchDB's HTTP API over the databases in one folder.
        .target(
            name: "SetteeServer",
            dependencies: [
                "Settee", "SetteeCore", "SetteeJavaScript", "SetteeQueryServer", "SetteeReplication",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "SetteeCLI",
            dependencies: [
                "Settee", "SetteeCore", "SetteeJavaScript",
                "SetteeQueryServer",
                "SetteeServer",
                "SetteeReplication",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "SetteeBenchmarks",
            dependencies: ["Settee", "SetteeStorage", .product(name: "Logging", package: "swift-log")]
        ),
        // `make bench-couchjs`: `settee couchjs` driven over its line protocol.
        .executableTarget(
            name: "SetteeCouchJSBenchmark",
            dependencies: ["Settee", "SetteeQueryServer"]
        ),
        .testTarget(
            name: "SetteeTests",
            dependencies: [
                "Settee", "SetteeCore", "SetteeStorage", "SetteeJavaScript", "SetteeViews", "SetteeFind",
                "SetteeQueryServer",
                "SetteeServer",
                "SetteeReplication",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)

for target in package.targets where target.type != .system && !target.name.hasPrefix("C") {
    target.swiftSettings = (target.swiftSettings ?? []) + swiftSettings
}
