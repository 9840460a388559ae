// swift-tools-version: 6.1
// libFuzzer targets for the parsers and coders that read what a server (or a caller) sends.
// A package of its own, so the main build never compiles them. From the repository:
//   make fuzz                                   (every target, FUZZ_SECONDS each)
//   FUZZ_TARGETS="HTTP1Response" make fuzz     (a subset)
// See README.md for what each target checks.
import PackageDescription

/// Each target is an executable whose `main` is libFuzzer's: Swift must not emit one of its
/// own, so the sources are read as a library (no top-level code, no `@main`).
let fuzzerSettings: [SwiftSetting] = [
    .unsafeFlags(["-parse-as-library"]),
]

func fuzzer(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + dependencies,
        path: "Sources/\(name)",
        swiftSettings: fuzzerSettings
    )
}

let package = Package(
    name: "SalvoFuzz",
    dependencies: [
        .package(name: "Salvo", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .target(name: "FuzzSupport", path: "Sources/FuzzSupport"),
        fuzzer("HTTP1Response", [
            .product(name: "SalvoCore", package: "Salvo"),
            .product(name: "SalvoTransport", package: "Salvo"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ]),
        fuzzer("ContentDecoding", [
            .product(name: "SalvoCore", package: "Salvo"),
            .product(name: "SalvoTransport", package: "Salvo"),
        ]),
        fuzzer("RequestValidation", [
            .product(name: "SalvoCore", package: "Salvo"),
            .product(name: "SalvoTransport", package: "Salvo"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ]),
        fuzzer("FormCoding", [.product(name: "Salvo", package: "Salvo")]),
        fuzzer("EventStreams", [
            .product(name: "Salvo", package: "Salvo"),
            .product(name: "SalvoTransport", package: "Salvo"),
        ]),
        fuzzer("CacheHeaders", [
            .product(name: "Salvo", package: "Salvo"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ]),
        fuzzer("JSONDifferential", [.product(name: "Salvo", package: "Salvo")]),
    ]
)
