/// What a transport told about an exchange besides its head and body, kept with a response.
struct ExchangeDetails: Sendable {
    var redirectChain: [String]
    var redirects: [RedirectHop]
    var effectiveRequest: HTTPRequest?
    var version: HTTPVersion
    var interimResponses: [HTTPResponse]
    var decodedContentEncoding: String?
    var metrics: TransportMetrics

    /// From `response`, its metrics complete when its body has been read.
    init(_ response: TransportResponse) {
        self.redirectChain = response.redirectChain
        self.redirects = response.redirects
        self.effectiveRequest = response.effectiveRequest
        self.version = response.version
        self.interimResponses = response.interimResponses
        self.decodedContentEncoding = response.decodedContentEncoding
        self.metrics = response.body.metrics ?? response.metrics
    }

    /// From a collected response.
    init(_ response: HTTPClientResponse) {
        self.redirectChain = response.redirectChain
        self.redirects = response.redirects
        self.effectiveRequest = response.effectiveRequest
        self.version = response.version
        self.interimResponses = response.interimResponses
        self.decodedContentEncoding = response.decodedContentEncoding
        self.metrics = response.metrics
    }
}
