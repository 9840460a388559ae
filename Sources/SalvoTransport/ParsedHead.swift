import HTTPTypes
import Synchronization

/// A final response head as the engine parsed it: the status, and the fields as the bytes
/// they came in (``FieldRecords``). The `HTTPResponse` is built the first time it is asked
/// for, and kept.
///
/// Most responses are read for their status, body and a field or two. Building every
/// field's `String` and `HTTPField` and the `HTTPFields` around them for each response was
/// the biggest single cost of the engine's API path (~15% of its CPU per request); a
/// caller who never looks at the fields now never pays for them, and one who does pays
/// once. Shared between threads like the response that holds it: the build is under a lock.
@_spi(Benchmarks) public final class ParsedHead: Sendable {
    public let status: HTTPResponse.Status
    package let fields: FieldRecords
    private let built = Mutex<HTTPResponse?>(nil)

    package init(status: HTTPResponse.Status, fields: FieldRecords) {
        self.status = status
        self.fields = fields
    }

    /// The head as an `HTTPResponse` (built on first use).
    public var response: HTTPResponse {
        self.built.withLock { built in
            if let built { return built }
            let response = HTTPResponse(status: self.status, headerFields: self.fields.makeFields())
            built = response
            return response
        }
    }
}

/// A response head held either built or as parsed, built on first use.
enum ResponseHeadStorage: Sendable {
    case built(HTTPResponse)
    case parsed(ParsedHead)

    var response: HTTPResponse {
        switch self {
        case .built(let response): response
        case .parsed(let head): head.response
        }
    }

    var status: HTTPResponse.Status {
        switch self {
        case .built(let response): response.status
        case .parsed(let head): head.status
        }
    }
}
