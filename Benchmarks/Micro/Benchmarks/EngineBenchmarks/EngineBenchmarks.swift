import Benchmark
import HTTPTypes
@_spi(Benchmarks) import SalvoCore
@_spi(Benchmarks) import SalvoTransport

/// A response as nginx sends it for a small static body.
let nginxResponse: [UInt8] = Array(("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 07:00:00 GMT\r\n"
    + "Content-Type: text/plain\r\nContent-Length: 13\r\nConnection: keep-alive\r\n\r\nhello, world\n").utf8)

/// Counts what the decoder reports, keeping nothing.
final class CountingDelegate: ResponseDecoderDelegate {
    var heads = 0
    var bodyBytes = 0
    func decoderReceivedInformational(_ head: HTTPResponse) {}
    func decoderReceivedHead(_ head: ParsedHead) -> Bool { self.heads += 1; return true }
    func decoderReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool { self.bodyBytes += bytes.count; return true }
    func decoderReceivedEnd(trailers: HTTPFields?, keepAlive: Bool) {}
}

let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .mallocCountTotal, .instructions, .throughput]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: metrics, scalingFactor: .kilo, maxDuration: .seconds(2))
    loadBenchmarks()

    Benchmark("RequestEncoder.encodeHead (GET, 3 fields)") { benchmark in
        var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8080", path: "/items?page=2")
        request.headerFields[.accept] = "application/json"
        request.headerFields[.userAgent] = "salvo/0.1"
        request.headerFields[.authorization] = "Bearer abcdef0123456789"
        var buffer: [UInt8] = []
        buffer.reserveCapacity(512)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            buffer.removeAll(keepingCapacity: true)
            try? RequestEncoder.encodeHead(request, body: .none, into: &buffer)
            blackHole(buffer.count)
        }
    }

    Benchmark("ResponseDecoder.feed (nginx 200, 13-byte body)") { benchmark in
        let decoder = ResponseDecoder()
        let delegate = CountingDelegate()
        decoder.delegate = delegate
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            decoder.prepareForNextResponse(expectNoBody: false)
            nginxResponse.withUnsafeBytes { _ = try? decoder.feed($0) }
        }
        blackHole(delegate.heads)
    }

    Benchmark("PoolStateMachine request + release (warm pool)") { benchmark in
        var pool = PoolStateMachine(maxConnections: 16)
        _ = pool.request(0)
        _ = pool.connected(1)
        _ = pool.released(1, reusable: true)
        benchmark.startMeasurement()
        var waiter = 1
        for _ in benchmark.scaledIterations {
            if case .lease(let connection, _) = pool.request(waiter) {
                blackHole(pool.released(connection, reusable: true))
            }
            waiter &+= 1
        }
    }

    Benchmark("PoolStateMachine queue of 64 through 16 connections") { benchmark in
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var pool = PoolStateMachine(maxConnections: 16)
            var connection = 0
            for waiter in 0..<64 where pool.request(waiter) == .connect {
                connection += 1
                _ = pool.connected(connection)
            }
            for id in 1...16 {
                var action = pool.released(id, reusable: true)
                while case .lease(let next, _) = action { action = pool.released(next, reusable: true) }
            }
            blackHole(pool)
        }
    }
}
