import FuzzSupport
import HTTPTypes
@testable import Salvo

/// The HTTP cache's reading of header fields: `Cache-Control` (response and request),
/// `Pragma`, `Age`, `Expires`, `Date`, `Last-Modified` and `Vary`, and the decisions made
/// from them (RFC 9111).
///
/// Input: a status byte, a time byte, then field values separated by 0xFF.
/// Invariants:
/// - no crash or trap, whatever the values (a time past any count included);
/// - a freshness lifetime and an age are finite and never negative, and `max-age` or
///   `Age` never count past 2^31 seconds;
/// - `Cache-Control` directive names are lower case, without white space; `Vary` names are
///   lower case and listed once, or `*` alone;
/// - an HTTP date that parses prints as an IMF-fixdate that parses back to the same second,
///   and any second printed parses back.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCacheHeaders(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let statuses = [200, 203, 204, 206, 300, 301, 304, 404, 410, 500, 999]
    let status = statuses[input.int(below: statuses.count)]
    let responseTime = 1_700_000_000 + Double(input.int(below: 1 << 16))
    let now = responseTime + Double(input.int(below: 1 << 16)) * 60
    func value() -> String { String(decoding: input.piece(until: 0xFF), as: UTF8.self) }

    var responseFields = HTTPFields()
    let names: [HTTPField.Name] = [.cacheControl, .age, .expires, .date, .lastModified, .vary, .cacheControl, .expires]
    for name in names where !input.isAtEnd {
        let text = value()
        if !text.isEmpty { responseFields.append(HTTPField(name: name, value: text)) }
    }
    var requestFields = HTTPFields()
    for name in [HTTPField.Name.cacheControl, .pragma, .accept] where !input.isAtEnd {
        requestFields.append(HTTPField(name: name, value: value()))
    }
    let response = HTTPResponse(status: HTTPResponse.Status(code: status), headerFields: responseFields)
    let request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/", headerFields: requestFields)

    checkDirectives(CacheControl(responseFields))
    checkDirectives(CacheRules.requestDirectives(request))
    let vary = CacheRules.varyNames(response)
    fuzzCheck(vary == ["*"] || (!vary.contains("*") && Set(vary).count == vary.count), "Vary names \(vary)")
    fuzzCheck(vary.allSatisfy { $0 == $0.lowercased() }, "Vary names not lower case: \(vary)")
    _ = CacheRules.varyValues(of: request, for: response, separatingCredentials: true)

    let rules = CacheRules()
    _ = rules.isStorable(request, response)
    let entry = StoredResponse(id: "1", key: CacheRules.key(for: request), head: response,
                               varyValues: CacheRules.varyValues(of: request, for: response),
                               requestTime: responseTime - 1, responseTime: responseTime, bodySize: 0)
    let lifetime = rules.freshnessLifetime(entry)
    let age = rules.currentAge(entry, now: now)
    fuzzCheck(lifetime.isFinite && lifetime >= 0, "lifetime \(lifetime) for \(responseFields)")
    fuzzCheck(age.isFinite && age >= 0, "age \(age) for \(responseFields)")
    fuzzCheck(CacheRules.ageValue(responseFields) <= 2_147_483_648, "Age past 2^31 for \(responseFields)")
    _ = rules.usability(of: entry, for: request, now: now)
    _ = rules.mayServeOnError(entry, for: request, now: now)
    _ = rules.timeToLive(entry, now: now)
    _ = CacheRules.matches(request, entry)

    for field in responseFields where [.expires, .date, .lastModified].contains(field.name) {
        checkDate(field.value)
    }
    // Any number of seconds, even NaN or past year 9999, prints as a date that parses.
    var raw: UInt64 = 0
    for byte in input.take(8) { raw = raw << 8 | UInt64(byte) }
    let seconds = Double(bitPattern: raw)
    let printed = HTTPDate.format(seconds)
    fuzzCheck(HTTPDate.parse(printed) != nil, "\(seconds) printed as \"\(printed)\", which does not parse")
    return 0
}

func checkDirectives(_ directives: CacheControl) {
    for (name, _) in directives.directives {
        fuzzCheck(!name.isEmpty && name == name.lowercased() && !name.contains(where: { $0 == " " || $0 == "\t" }),
                  "directive name \(name.debugDescription)")
        if case .value(let seconds) = directives.seconds(name) {
            fuzzCheck(seconds >= 0 && seconds <= 2_147_483_648, "\(name)=\(seconds)")
        }
    }
}

func checkDate(_ text: String) {
    guard let seconds = HTTPDate.parse(text) else { return }
    fuzzCheck(seconds.isFinite && seconds == seconds.rounded(.down), "\"\(text)\" parsed as \(seconds)")
    // Printing clamps to years 1970–9999; within them a date goes round.
    guard seconds >= 0 && seconds <= 253_402_300_799 else { return }
    let printed = HTTPDate.format(seconds)
    fuzzCheck(HTTPDate.parse(printed) == seconds, "\"\(text)\" → \(seconds) → \"\(printed)\" → \(String(describing: HTTPDate.parse(printed)))")
}
