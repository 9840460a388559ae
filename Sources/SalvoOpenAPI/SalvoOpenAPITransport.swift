public import Foundation
public import HTTPTypes
public import OpenAPIRuntime
public import SalvoCore
public import SalvoTransport

/// A swift-openapi-runtime `ClientTransport` over Salvo's engine: the clients that
/// swift-openapi-generator writes send through it. Bodies stream both ways, with or without a
/// known length; a call is bounded by the configuration's timeout and ends when its task is
/// cancelled; an engine failure reaches the generated client as the `TransportError` under its
/// `ClientError`.
///
/// ```swift
/// let client = Client(serverURL: URL(string: "https://api.example.com")!, transport: try SalvoOpenAPITransport())
/// let user = try await client.getUser(path: .init(id: 7)).ok.body.json
/// ```
public struct SalvoOpenAPITransport: ClientTransport {
    /// How each call goes.
    public struct Configuration: Sendable {
        /// The engine's options for each call: its timeout (the whole call, body included),
        /// head and read timeouts, and the rest. Default: the engine client's own.
        public var options: TransportOptions

        public init(options: TransportOptions = TransportOptions()) {
            self.options = options
        }

        /// Each call bounded by `timeout`.
        public init(timeout: Duration) {
            self.options = TransportOptions(timeout: timeout)
        }
    }

    /// The engine client the calls go through.
    public let client: HTTPClient
    public var configuration: Configuration

    /// Calls through `client`, which you shut down when you are done with it.
    public init(client: HTTPClient, configuration: Configuration = Configuration()) {
        self.client = client
        self.configuration = configuration
    }

    /// Calls through the process's shared engine client, `HTTPClient.shared`.
    ///
    /// - Throws: the error that kept the shared client from starting.
    public init(configuration: Configuration = Configuration()) throws(TransportError) {
        self.init(client: try HTTPClient.shared, configuration: configuration)
    }

    public func send(_ request: HTTPRequest, body: OpenAPIRuntime.HTTPBody?, baseURL: URL,
                     operationID: String) async throws -> (HTTPResponse, OpenAPIRuntime.HTTPBody?) {
        let head = try OpenAPIRequests.head(request, baseURL: baseURL)
        let response = try await self.client.send(head, body: body.map(OpenAPIRequests.body), options: self.configuration.options)
        return (response.head, OpenAPIRequests.body(of: response, for: head))
    }
}

/// Requests and bodies between swift-openapi-runtime's types and the engine's.
enum OpenAPIRequests {
    /// The request with the base URL's scheme, authority and path in front of its own.
    static func head(_ request: HTTPRequest, baseURL: URL) throws(TransportError) -> HTTPRequest {
        guard let components = URLComponents(url: baseURL, resolvingAgainstBaseURL: true),
              let scheme = components.scheme, let host = components.percentEncodedHost, !host.isEmpty else {
            throw TransportError(.invalidURL, detail: "the server URL \(baseURL.absoluteString) has no scheme or host")
        }
        // An IPv6 literal is bracketed in the authority (Foundation may give it with or without).
        var authority = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        if let port = components.port { authority += ":\(port)" }
        var prefix = components.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let path = request.path ?? "/"
        var head = request
        head.scheme = scheme
        head.authority = authority
        head.path = prefix + (path.hasPrefix("/") ? path : "/" + path)
        return head
    }

    /// A request body for the engine: streamed as the connection takes it, with its length
    /// when known, replayable (for a retry or a 307/308) when the runtime's body can be read
    /// again.
    static func body(_ body: OpenAPIRuntime.HTTPBody) -> SalvoTransport.HTTPBody {
        let length: Int? = switch body.length {
        case .known(let count): Int(count)
        case .unknown: nil
        }
        return .producer(length: length, replayable: body.iterationBehavior == .multiple) { writer in
            for try await chunk in body {
                try await writer.write(Array(chunk))
            }
        }
    }

    /// The response body for the runtime, streamed: its length when the head gives one for
    /// these very bytes (not when the engine decoded a content coding); none for a HEAD.
    static func body(of response: TransportResponse, for request: HTTPRequest) -> OpenAPIRuntime.HTTPBody? {
        if request.method == .head { return nil }
        var length = OpenAPIRuntime.HTTPBody.Length.unknown
        if response.decodedContentEncoding == nil, let text = response.head.headerFields[.contentLength], let count = Int64(text) {
            length = .known(count)
        }
        return OpenAPIRuntime.HTTPBody(response.body, length: length, iterationBehavior: .single)
    }
}
