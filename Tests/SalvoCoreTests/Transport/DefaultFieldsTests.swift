import HTTPTypes
import SalvoTransport
import Testing

/// The one rule by which both layers fill in a request's fields from a client's defaults and
/// from what its body says of itself.
@Suite struct DefaultFieldsTests {
    static let tenant = HTTPField.Name("X-Tenant")!

    @Test func aRequestsOwnFieldsWinAndADefaultGivenTwiceKeepsBothValues() {
        var defaults = HTTPFields()
        defaults.append(HTTPField(name: .accept, value: "application/json"))
        defaults.append(HTTPField(name: .accept, value: "text/plain;q=0.5"))
        defaults[Self.tenant] = "acme"
        defaults[.userAgent] = "app/1"
        var fields: HTTPFields = [.userAgent: "mine/2"]
        fields.addDefaults(defaults)
        #expect(fields[values: .accept] == ["application/json", "text/plain;q=0.5"], "both values of a default given twice")
        #expect(fields[values: .userAgent] == ["mine/2"], "the request's own field wins")
        #expect(fields[Self.tenant] == "acme")
        let once = fields
        fields.addDefaults(defaults)
        #expect(fields == once, "applying the same defaults again changes nothing")
    }

    @Test func theBodySaysWhatTheRequestDoesNot() {
        let json = HTTPBody.string("{}", contentType: "application/json")
        var plain = HTTPFields()
        plain.addDefaults([:], for: json)
        #expect(plain[.contentType] == "application/json")
        var own: HTTPFields = [.contentType: "application/vnd.api+json"]
        own.addDefaults([:], for: json)
        #expect(own[values: .contentType] == ["application/vnd.api+json"])
        var coded = HTTPBody.bytes([1, 2, 3])
        coded.contentEncoding = "gzip"
        let unsaid = HTTPFields().unsaid(by: coded)
        #expect(unsaid.contentType == nil && unsaid.contentEncoding == "gzip")
    }

    /// Found in review: a client's default Content-Type must not override the body's own (a
    /// multipart body's carries its boundary): the request's own, then the body's, then the
    /// defaults.
    @Test func theBodysTypeComesBeforeADefaultOne() {
        let multipart = HTTPBody.bytes([1], contentType: "multipart/form-data; boundary=b1")
        var fields = HTTPFields()
        fields.addDefaults([.contentType: "application/json", Self.tenant: "acme"], for: multipart)
        #expect(fields[values: .contentType] == ["multipart/form-data; boundary=b1"])
        #expect(fields[Self.tenant] == "acme")
        var engine = HTTPFields()
        let said = engine.addDefaults([.contentType: "application/json"], for: multipart, addingBodyFields: false)
        #expect(said.contentType == "multipart/form-data; boundary=b1")
        #expect(engine[.contentType] == nil, "the engine writes the body's type itself, after the framing")
    }
}
