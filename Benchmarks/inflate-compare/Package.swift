// swift-tools-version: 6.1
// Salvo's streaming gzip decoder against a plain zlib inflate loop on the same data, in
// the same run. Run from this directory:
//   swift run -c release inflate-compare
import PackageDescription

let package = Package(
    name: "InflateCompare",
    dependencies: [.package(name: "Salvo", path: "../..")],
    targets: [
        .systemLibrary(name: "CZlibBaseline", pkgConfig: "zlib"),
        .executableTarget(
            name: "inflate-compare",
            dependencies: ["CZlibBaseline", .product(name: "SalvoCore", package: "Salvo")],
            path: "Sources/InflateCompare"
        ),
    ]
)
