// swift-tools-version:6.0
// ahc-load: a closed-loop HTTP load client built on async-http-client, used by
// ../compare.py as a side-by-side reference for Salvo. It is a separate package so
// that Salvo itself never depends on async-http-client.
import PackageDescription

let package = Package(
    name: "ahc-load",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.27.0"),
    ],
    targets: [
        .executableTarget(
            name: "ahc-load",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        )
    ]
)
