/// What a transport told about an exchange besides its head and body, kept with a response:
/// the version, the metrics, and what most exchanges lack behind one reference.
struct ExchangeDetails: Sendable {
    var version: HTTPVersion
    var metrics: TransportMetrics
    var extras: ExchangeExtras

    var redirectChain: [String] { self.extras.redirectChain }
    var redirects: [RedirectHop] { self.extras.redirects }
    var effectiveRequest: HTTPRequest? { self.extras.effectiveRequest }
    var interimResponses: [HTTPResponse] { self.extras.interimResponses }
    var decodedContentEncoding: String? { self.extras.decodedContentEncoding }

    /// From a streamed response; its metrics are complete once its body has been read.
    init(_ response: TransportResponse) {
        self.version = response.version
        self.metrics = response.body.metrics ?? response.metrics
        self.extras = response.extras
    }

    init(_ response: HTTPClientResponse) {
        self.version = response.version
        self.metrics = response.metrics
        self.extras = response.extras
    }
}
