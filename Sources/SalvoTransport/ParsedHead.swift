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
///
/// In the seam, not the engine, because ``CollectedResponse`` holds it (see ``FieldRecords``
/// for why); a response made by any other transport holds a head given built.
@_spi(Benchmarks) public final class ParsedHead: Sendable {
    public let status: HTTPResponse.Status
    package let fields: FieldRecords
    private let built: Mutex<HTTPResponse?>

    package init(status: HTTPResponse.Status, fields: FieldRecords) {
        self.status = status
        self.fields = fields
        self.built = Mutex(nil)
    }

    /// A head given built (a response made by hand, or one whose head was set): nothing left
    /// to build, and no records — `fields` is empty; read such a head through ``response``.
    package init(built response: HTTPResponse) {
        self.status = response.status
        self.fields = FieldRecords()
        self.built = Mutex(response)
    }

    /// The head as an `HTTPResponse` (built on first use).
    public var response: HTTPResponse {
        self.built.withLock { built in
            if let built { return built }
            let response = self.build()
            built = response
            return response
        }
    }

    /// The head as an `HTTPResponse`, which this object lets go of (no second reference to
    /// its fields): for the one response that holds this, to edit it in place.
    package func takeResponse() -> HTTPResponse {
        self.built.withLock { built in
            built.take() ?? self.build()
        }
    }

    private func build() -> HTTPResponse {
        HTTPResponse(status: self.status, headerFields: self.fields.makeFields())
    }
}
