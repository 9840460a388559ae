// swift-tools-version:6.2
// A load test as a package of its own: the workload in Sources/load/main.swift, built and run
// with one command (see README.md):
//
//     swift run -c release load http://127.0.0.1:8080 -c 64 -d 30s
import PackageDescription

let package = Package(
    name: "LoadTest",
    dependencies: [
        // Salvo from this checkout. In a package of your own, name it by where you get it from
        // and a version instead:
        //     .package(url: "<Salvo's git URL>", from: "<version>"),
        .package(name: "Salvo", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "load",
            dependencies: [.product(name: "SalvoLoad", package: "Salvo")],
            path: "Sources/load"
        ),
    ]
)
