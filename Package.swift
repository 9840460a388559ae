// swift-tools-version:6.2
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Salvo",
    products: [
        .library(name: "SalvoTransport", targets: ["SalvoTransport"]),
        .library(name: "SalvoCore", targets: ["SalvoCore"]),
        .library(name: "SalvoLoad", targets: ["SalvoLoad"]),
        .library(name: "Salvo", targets: ["Salvo"]),
        // The declarative front ends (`@API`, `@Mock`, `@Request`): the only product that builds
        // swift-syntax, so that users of the engine or the typed layer alone never do.
        .library(name: "SalvoMacros", targets: ["SalvoMacros"]),
        // The engine client as a swift-service-lifecycle Service, apart so that only those who
        // want the dependency build it.
        .library(name: "SalvoServiceLifecycle", targets: ["SalvoServiceLifecycle"]),
        // A swift-openapi-runtime ClientTransport over the engine, for generated clients.
        .library(name: "SalvoOpenAPI", targets: ["SalvoOpenAPI"]),
        // The engine's logs, metrics and traces through swift-log, swift-metrics and
        // swift-distributed-tracing (an EngineObserver), apart so that only those who want
        // them build them.
        .library(name: "SalvoObservability", targets: ["SalvoObservability"]),
        .executable(name: "salvo", targets: ["salvo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", "600.0.0"..<"700.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        // `make docs`: the DocC catalogs into a static site. A plugin only: nothing of it is linked.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        // llhttp: from the distribution (libllhttp-dev) or built by scripts/setup; both
        // install a pkg-config file named libllhttp.
        .systemLibrary(
            name: "CLLHTTP",
            pkgConfig: "libllhttp",
            providers: [.apt(["libllhttp-dev"])]
        ),
        // OpenSSL (libssl-dev), for TLS.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // zlib (zlib1g-dev), for gzip and deflate content coding.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // nghttp2 (libnghttp2-dev), for HTTP/2.
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        // The only C of the project: Linux and OpenSSL macros that Swift cannot import, and
        // OpenSSL's socket BIO redone to write with MSG_NOSIGNAL.
        .target(name: "CSalvo", dependencies: ["COpenSSL"]),
        // The seam between the typed layer and any transport: request and response bodies, the
        // Transport protocol, the error type. Swift and swift-http-types only.
        .target(
            name: "SalvoTransport",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "SalvoCore",
            dependencies: [
                "SalvoTransport",
                "CSalvo",
                "CLLHTTP",
                "COpenSSL",
                "CZlib",
                "CNGHTTP2",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The typed layer: requests as types, one client, typed responses, coders, mocking.
        // It talks to transports through SalvoTransport; the engine is only its default.
        .target(
            name: "Salvo",
            dependencies: [
                "SalvoTransport",
                "SalvoCore",
                // CRC-32 for the disk cache's checksums.
                "CZlib",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The compiler plugin behind SalvoMacros: reads a protocol's attributes and writes its
        // client and its mock.
        .macro(
            name: "SalvoMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        // The macros' declarations and what their code calls: requests put together from a
        // function's arguments, the sends chosen by return type, the mocks' handlers.
        .target(
            name: "SalvoMacros",
            dependencies: [
                "Salvo",
                "SalvoMacrosPlugin",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "SalvoServiceLifecycle",
            dependencies: [
                "SalvoCore",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "SalvoOpenAPI",
            dependencies: [
                "SalvoCore",
                "SalvoTransport",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "SalvoObservability",
            dependencies: [
                "SalvoCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The typed layer's tour, run by `make demo` against scripts/demo-api.py.
        .executableTarget(
            name: "TypedClientDemo",
            dependencies: ["Salvo"],
            path: "Examples/TypedClient",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // A scripted load test (Workload) against the demo API, run by `make demo`.
        .executableTarget(
            name: "workload-demo",
            dependencies: ["SalvoLoad", "SalvoCore", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Examples/Workload",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // A caching reverse proxy on the public API: what the caching conformance suite runs
        // against (scripts/cache-conformance).
        .executableTarget(
            name: "caching-proxy",
            dependencies: ["Salvo", "SalvoCore", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Examples/CachingProxy",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The typed scenarios' load client (Benchmarks/compare.py): the typed client, or the
        // raw API with a JSONDecoder, against the same JSON document.
        .executableTarget(
            name: "typed-load",
            dependencies: ["Salvo", "SalvoCore"],
            path: "Benchmarks/typed-load",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // A million requests through the engine and 100,000 through the typed layer, memory
        // and descriptors sampled (`make soak`, scripts/soak).
        .executableTarget(
            name: "soak",
            dependencies: ["Salvo", "SalvoCore"],
            path: "Benchmarks/soak",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The scripted workload of Benchmarks/wrk-scripted.lua as a Workload (compare.py's
        // salvo-scripted).
        .executableTarget(
            name: "scripted-load",
            dependencies: ["SalvoLoad"],
            path: "Benchmarks/scripted-load",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // A client generated by @API next to the same request written by hand (Benchmarks/api-cost.py).
        .executableTarget(
            name: "api-load",
            dependencies: ["SalvoMacros", "Salvo", "SalvoCore"],
            path: "Benchmarks/api-load",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The load generator: loop-native connections that allocate nothing per request.
        .target(
            name: "SalvoLoad",
            dependencies: [
                "SalvoCore",
                "SalvoTransport",
                "CSalvo",
                "CLLHTTP",
                "CNGHTTP2",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                // The command line a workload's package gets (``Workload/main(url:)``).
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "salvo",
            dependencies: [
                "SalvoCore",
                "SalvoLoad",
                "CSalvo",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A process the disk cache's tests start and kill with SIGKILL in the middle of
        // storing an entry, or run beside themselves on the same directory.
        .executableTarget(
            name: "cache-store-child",
            dependencies: ["Salvo", "SalvoTestSupport"],
            path: "Tests/cache-store-child",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // A process that leaves with requests of the shared engine client in flight.
        .executableTarget(
            name: "shared-client-child",
            dependencies: ["Salvo", "SalvoCore"],
            path: "Tests/shared-client-child",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // What the test targets share: servers the tests start, hang detectors.
        .target(
            name: "SalvoTestSupport",
            dependencies: ["SalvoTransport"],
            path: "Tests/SalvoTestSupport"
        ),
        .testTarget(
            name: "SalvoTests",
            dependencies: [
                "Salvo",
                // Only for tests that need an engine configured otherwise than the default
                // transport (a test certificate to trust).
                "SalvoCore",
                "SalvoTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "SalvoMacrosTests",
            dependencies: [
                "SalvoMacros",
                "SalvoMacrosPlugin",
                "SalvoTestSupport",
                .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax"),
            ]
        ),
        .testTarget(
            name: "SalvoServiceLifecycleTests",
            dependencies: [
                "SalvoServiceLifecycle",
                "SalvoCore",
                "SalvoTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // A client generated once by swift-openapi-generator from OpenAPI/openapi.yaml and
        // committed (Generated/), so that the build never runs the generator.
        .testTarget(
            name: "SalvoOpenAPITests",
            dependencies: [
                "SalvoOpenAPI",
                "SalvoCore",
                "SalvoTestSupport",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            exclude: ["OpenAPI"]
        ),
        .testTarget(
            name: "SalvoObservabilityTests",
            dependencies: [
                "SalvoObservability",
                "SalvoCore",
                "SalvoTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "SalvoCoreTests",
            dependencies: [
                "SalvoTestSupport",
                "SalvoTransport",
                "SalvoCore",
                "SalvoLoad",
                "CSalvo",
                "CLLHTTP",
                "CZlib",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
