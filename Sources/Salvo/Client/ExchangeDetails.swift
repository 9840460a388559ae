/// What a transport told about an exchange besides its head and body, kept with a response.
struct ExchangeDetails: Sendable {
    var redirectChain: [String]
    var redirects: [RedirectHop]
    var effectiveRequest: HTTPRequest?
    var version: HTTPVersion
    var interimResponses: [HTTPResponse]
    var decodedContentEncoding: String?
    var metrics: TransportMetrics

    /// From a streamed or a collected response; a streamed one's metrics are complete once
    /// its body has been read.
    init(_ response: some TransportExchange) {
        self.redirectChain = response.redirectChain
        self.redirects = response.redirects
        self.effectiveRequest = response.effectiveRequest
        self.version = response.version
        self.interimResponses = response.interimResponses
        self.decodedContentEncoding = response.decodedContentEncoding
        self.metrics = response.exchangeMetrics
    }
}

/// The two forms a transport answers in, seen alike for their ``ExchangeDetails``.
protocol TransportExchange {
    var redirectChain: [String] { get }
    var redirects: [RedirectHop] { get }
    var effectiveRequest: HTTPRequest? { get }
    var version: HTTPVersion { get }
    var interimResponses: [HTTPResponse] { get }
    var decodedContentEncoding: String? { get }
    var exchangeMetrics: TransportMetrics { get }
}

extension TransportResponse: TransportExchange {
    var exchangeMetrics: TransportMetrics { self.body.metrics ?? self.metrics }
}

extension HTTPClientResponse: TransportExchange {
    var exchangeMetrics: TransportMetrics { self.metrics }
}
