// A caching reverse proxy built on Salvo's public API: every request that comes in goes
// through a `Client` with an HTTP cache to one upstream server, and what the client answers
// goes back — any method, any header field, the cache deciding what reaches the upstream.
//
//     caching-proxy --upstream http://127.0.0.1:8000 --listen 127.0.0.1:8001 [--disk DIR]
//
// It is how the cache is checked against the HTTP caching conformance suite
// (scripts/cache-conformance), and a template for putting a private cache in front of a
// service. It prints `PORT n` once it listens.

import Foundation
import HTTPTypes
import Salvo
import SalvoCore

@main
enum CachingProxy {
    static func main() async throws {
        var arguments = CommandLine.arguments.dropFirst()
        var upstream = "http://127.0.0.1:8000"
        var listen = "127.0.0.1:0"
        var disk: String?
        while let argument = arguments.popFirst() {
            switch argument {
            case "--upstream": upstream = arguments.popFirst() ?? upstream
            case "--listen": listen = arguments.popFirst() ?? listen
            case "--disk": disk = arguments.popFirst()
            default:
                FileHandle.standardError.write(Data("usage: caching-proxy --upstream URL [--listen HOST:PORT] [--disk DIR]\n".utf8))
                exit(2)
            }
        }

        // The engine passes messages through as they are: no redirects followed, no content
        // decoded, no User-Agent of its own.
        var engineConfiguration = HTTPClient.Configuration()
        engineConfiguration.redirects = .disabled
        engineConfiguration.decompression = .disabled
        engineConfiguration.userAgent = nil
        let engine = try HTTPClient(configuration: engineConfiguration)

        let store: any HTTPCacheStore = try disk.map { try DiskCacheStore(directory: $0, capacity: 256 << 20) }
            ?? MemoryCacheStore(capacity: 256 << 20)
        // Each answer says how the cache served it, in an RFC 9211 Cache-Status field.
        let cache = HTTPCache(store: store, options: HTTPCache.Options(statusHeaderName: "Salvo"))
        let client = try Client(baseURL: BaseURL(upstream), transport: engine,
                                configuration: Client.Configuration(cache: cache))

        let server = ProxyServer { incoming in await Self.forward(incoming, through: client) }
        let parts = listen.split(separator: ":")
        let port = try server.start(host: String(parts.first ?? "127.0.0.1"), port: Int(parts.last ?? "0") ?? 0)
        FileHandle.standardOutput.write(Data("PORT \(port)\n".utf8))
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    /// One request through the client, its answer as it came (any status).
    static func forward(_ incoming: ProxyServer.Incoming, through client: Client) async -> ProxyServer.Outgoing {
        var fields = HTTPFields()
        for field in incoming.fields {
            let lower = field.name.lowercased()
            // The Host is the upstream's; fields about this connection stay here.
            guard lower != "host", !ProxyServer.hopByHop.contains(lower), lower != "content-length",
                  let name = HTTPField.Name(field.name) else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        let method = HTTPRequest.Method(incoming.method) ?? .get
        let body: EndpointBody = incoming.body.isEmpty && (method == .get || method == .head) ? .none : .raw(.bytes(incoming.body))
        let endpoint = Endpoint<Void>(method: method, path: incoming.target, headers: fields, body: body)
        do {
            // Every status is an answer to pass on: no validators.
            let response = try await client.send(endpoint, options: Client.CallOptions(validators: []))
            return ProxyServer.Outgoing(status: Int(response.status.code), reason: response.status.reasonPhrase,
                                        fields: response.headerFields.map { ($0.name.rawName, $0.value) }, body: response.body)
        } catch {
            // Nothing usable stored for an only-if-cached request: 504, as a cache says it.
            let status = error.code == .notCached ? 504 : 502
            return ProxyServer.Outgoing(status: status, reason: status == 504 ? "Gateway Timeout" : "Bad Gateway",
                                        fields: [("Content-Type", "text/plain")], body: Array("\(error)\n".utf8))
        }
    }
}
