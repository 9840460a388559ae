import SalvoTransport

/// What carries a request's exchange for its owner: an HTTP/1.1 connection today, and what a
/// multiplexed connection's stream will be. The owner knows its request only by this: it
/// never asks a carrier what to do, it only stops an exchange or lets it read on; everything
/// else flows the other way, as facts the carrier reports (``RequestOwner``'s `connectionTook`,
/// `receiveHead`, `receiveBody`, `exchangeSucceeded`, `exchangeFailed`, `leftLine`).
/// Loop-confined, like the owner.
protocol ExchangeCarrier: AnyObject {
    /// Ends the exchange it carries now with `error` (a cancellation, a decoding failure): the
    /// owner hears it back as a failed exchange.
    func fail(_ error: TransportError)
    /// The owner's caller wants more of a paused response.
    func resumeReading()
    /// `owner`'s request waits on this carrier for its turn (written, its answer not begun):
    /// it leaves, failing with `error`.
    func cancelWaiting(_ owner: RequestOwner, error: TransportError)
    /// The addresses of the connection, for the metrics.
    var endpoints: ConnectionEndpoints { get }
    /// The version the exchange is carried in.
    var httpVersion: HTTPVersion { get }
}

/// The two ends of a connection, as its socket reports them once open.
struct ConnectionEndpoints {
    var remote: SocketEndpoint?
    var local: SocketEndpoint?
}
