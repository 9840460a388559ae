/// What a transport told about an exchange besides its head and body, kept with a response:
/// the version, the metrics, and what most exchanges lack behind one reference.
struct ExchangeDetails: Sendable {
    var version: HTTPVersion
    var metrics: TransportMetrics
    var extras: ExchangeExtras

    var redirectChain: [String] { self.extras.values.redirectChain }
    var redirects: [RedirectHop] { self.extras.values.redirects }
    var effectiveRequest: HTTPRequest? { self.extras.values.effectiveRequest }
    var interimResponses: [HTTPResponse] { self.extras.values.interimResponses }
    var decodedContentEncoding: String? { self.extras.values.decodedContentEncoding }

    /// From a streamed response; its metrics are complete once its body has been read.
    init(_ response: TransportResponse) {
        self.version = response.version
        self.metrics = response.body.metrics ?? response.metrics
        self.extras = response.extras
    }

    init(_ response: CollectedResponse) {
        self.version = response.version
        self.metrics = response.metrics
        self.extras = response.extras
    }
}
