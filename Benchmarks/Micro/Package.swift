// swift-tools-version: 6.1
// Microbenchmarks of the engine's hot paths, with allocation counts. A package of its own so
// the main build does not pay for the benchmark framework. Run from this directory:
//   swift package --allow-writing-to-package-directory benchmark
import PackageDescription

let package = Package(
    name: "SalvoMicrobenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Salvo", path: "../.."),
        .package(url: "https://github.com/ordo-one/package-benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "EngineBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "SalvoCore", package: "Salvo"),
                .product(name: "SalvoLoad", package: "Salvo"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Benchmarks/EngineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ]
)
