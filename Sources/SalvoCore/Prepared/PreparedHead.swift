import HTTPTypes
import SalvoTransport

/// A template's request head, encoded once and cut where each call's values go: the bytes
/// between the gaps, kept as they are, and what fills each gap — a parameter's value,
/// percent-encoded, or the body's length. A call without gaps or extra fields sends the
/// prepared head itself (a reference, no copy).
struct PreparedHead: Sendable {
    /// The body length the template is prepared with, found again in its Content-Length.
    static let lengthMarker = 918_273_645_546_372

    enum Gap: Sendable {
        case parameter(Int, TemplateURL.Place)
        case contentLength
    }

    /// The head as prepared.
    let whole: [UInt8]
    /// `literals[i]` comes before `gaps[i]`; the last literal ends the head.
    private let literals: [[UInt8]]
    private let gaps: [Gap]
    private let url: TemplateURL

    init(_ whole: [UInt8], url: TemplateURL, sendsBody: Bool) throws(TransportError) {
        var found: [(at: Int, length: Int, gap: Gap)] = []
        for (index, place) in url.places.enumerated() {
            let marker = Array(TemplateURL.marker(index).utf8)
            found.append(try Self.only(marker, in: whole, gap: .parameter(index, place)))
        }
        if sendsBody {
            found.append(try Self.only(Array(String(Self.lengthMarker).utf8), in: whole, gap: .contentLength))
        }
        found.sort { $0.at < $1.at }
        var literals: [[UInt8]] = []
        var start = 0
        for gap in found {
            literals.append(Array(whole[start..<gap.at]))
            start = gap.at + gap.length
        }
        literals.append(Array(whole[start...]))
        self.whole = whole
        self.literals = literals
        self.gaps = found.map { $0.gap }
        self.url = url
    }

    /// Where `marker` stands in `head`, which holds it exactly once.
    private static func only(_ marker: [UInt8], in head: [UInt8], gap: Gap) throws(TransportError) -> (at: Int, length: Int, gap: Gap) {
        let positions = head.positions(of: marker)
        guard positions.count == 1 else {
            throw TransportError(.invalidRequest, phase: .request,
                                 detail: "the template's head could not be prepared (its text holds what the engine marks it with)")
        }
        return (positions[0], marker.count, gap)
    }

    /// The head of one call; `fields` checked already (``check(_:besides:)``).
    func head(parameters: [String], fields: HTTPFields, bodyLength: Int) throws(TransportError) -> [UInt8] {
        if self.gaps.isEmpty && fields.isEmpty { return self.whole }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(self.whole.count + 16 * self.gaps.count + 32 * fields.count)
        for (index, gap) in self.gaps.enumerated() {
            bytes.append(contentsOf: self.literals[index])
            switch gap {
            case .parameter(let parameter, let place):
                TemplateURL.encode(parameters[parameter], for: place, into: &bytes)
            case .contentLength: bytes.append(contentsOf: String(bodyLength).utf8)
            }
        }
        let last = self.literals[self.literals.count - 1]
        if fields.isEmpty {
            bytes.append(contentsOf: last)
        } else {
            // The call's own fields go before the blank line that ends the head.
            bytes.append(contentsOf: last[..<(last.count - 2)])
            for field in fields {
                bytes.append(contentsOf: field.name.rawName.utf8)
                bytes.append(contentsOf: ": ".utf8)
                bytes.append(contentsOf: field.value.utf8)
                bytes.append(contentsOf: "\r\n".utf8)
            }
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if self.url.hasPathParameters {
            // The request target: between the request line's two spaces.
            let space = UInt8(ascii: " ")
            if let start = bytes.firstIndex(of: space), let end = bytes[(start + 1)...].firstIndex(of: space) {
                try self.url.checkPath(of: bytes[(start + 1)..<end])
            }
        }
        return bytes
    }

    /// The template's URL with `parameters` in place (checked as for a head), as text.
    func url(_ parameters: [String]) throws(TransportError) -> String {
        let url = self.url.url(parameters)
        if self.url.hasPathParameters { try self.url.checkPath(of: url.utf8) }
        return url
    }

    /// Refuses a call's own fields that the engine writes, that the template or the client
    /// already sends (`fixed`, lowercased: a call does not send a second `Authorization` or
    /// `User-Agent` beside them), or whose value could end its line.
    static func check(_ fields: HTTPFields, besides fixed: Set<String>) throws(TransportError) {
        for field in fields {
            let name = field.name.canonicalName
            if RequestEncoder.fieldsTheEngineWrites.contains(name) {
                throw TransportError(.invalidRequest, phase: .request,
                                     detail: "\(field.name) is the engine's to write; it cannot be a call's own field")
            }
            if fixed.contains(name) {
                throw TransportError(.invalidRequest, phase: .request,
                                     detail: "\(field.name) is sent by the template or the client already; a call cannot send a second")
            }
            _ = try RequestEncoder.checkedValue(field.value, of: field.name.rawName)
        }
    }
}
