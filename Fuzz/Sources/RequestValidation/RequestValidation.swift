import FuzzSupport
import HTTPTypes
@_spi(Benchmarks) @testable import SalvoCore
@_spi(Benchmarks) import SalvoTransport

/// What the engine checks before a byte goes out, and where a redirect leads.
///
/// Input: a mode byte, then pieces separated by 0xFF bytes.
/// Invariants:
/// - URLs: a URL the parser accepts has a host, a port in 1…65535 and a target of visible
///   ASCII starting with `/`, and its own printed form parses back to the same scheme,
///   authority and target;
/// - request heads: whatever the method, target, authority and fields, the encoder throws a
///   `TransportError` or writes a head with no NUL, no CR or LF outside line ends, one
///   request line of three parts, field lines of a token and a colon, and one blank line, at
///   its end (no header injection, no smuggling);
/// - redirects: any Location is resolved without a crash; a redirect that is followed leads
///   to a request that encodes, never carries the first origin's credentials to another
///   origin, and resolving its URL again (once normalized) changes nothing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestValidation(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    switch mode % 3 {
    case 0:
        checkURL(String(decoding: input.rest(), as: UTF8.self))
    case 1:
        checkHead(&input, mode: mode)
    default:
        checkRedirect(&input, mode: mode)
    }
    return 0
}

/// A piece of text up to the next 0xFF byte (0xFF is never part of UTF-8).
func text(_ input: inout FuzzInput) -> String {
    String(decoding: input.piece(until: 0xFF), as: UTF8.self)
}

func checkURL(_ text: String) {
    guard let url = try? RequestURL(text) else { return }
    fuzzCheck(!url.host.isEmpty, "\"\(text)\" parsed with no host")
    fuzzCheck((1...65535).contains(url.port), "\"\(text)\" parsed with port \(url.port)")
    fuzzCheck(url.target.hasPrefix("/") && url.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F },
              "\"\(text)\" parsed with target \"\(url.target)\"")
    // The printed form leaves out userinfo, and an IPv6 zone (it means nothing off this
    // host, RFC 6874 §4): compare what goes on the wire.
    do throws(TransportError) {
        let again = try RequestURL(url.description)
        fuzzCheck(again.key.description == url.key.description && again.target == url.target,
                  "\"\(text)\" → \(url) → \(again)")
    } catch {
        fuzzCheck(false, "\"\(text)\" → \(url), which does not parse: \(error)")
    }
}

func checkHead(_ input: inout FuzzInput, mode: UInt8) {
    let methodText = text(&input)
    guard let method = HTTPRequest.Method(methodText) else { return }
    let path = text(&input)
    let authority = text(&input)
    var fields = HTTPFields()
    while !input.isAtEnd && fields.count < 16 {
        let nameText = text(&input)
        let value = input.piece(until: 0xFF)
        guard let name = HTTPField.Name(nameText) else { continue }
        // Lenient values keep bytes the strict initializer would have replaced.
        fields.append(mode & 0x80 != 0 ? HTTPField(name: name, lenientValue: value) : HTTPField(name: name, value: value))
    }
    let request = HTTPRequest(method: method, scheme: "http", authority: authority.isEmpty ? nil : authority,
                              path: path, headerFields: fields)
    let body: RequestBodyLength = switch mode / 4 % 3 {
    case 0: .none
    case 1: .known(Int(mode))
    default: .unknown
    }
    var head: [UInt8] = []
    guard (try? RequestEncoder.encodeHead(request, body: body, into: &head)) != nil else { return }
    HeadShape.check(head)
}

func checkRedirect(_ input: inout FuzzInput, mode: UInt8) {
    let bases = ["http://example.com/a/b/c?q", "https://user:pw@example.com:8443/", "http://127.0.0.1/x/", "https://[::1]/a/./b"]
    let base = bases[Int(mode / 4) % bases.count]
    let location = text(&input)
    let resolved = URLReference.resolve(location, against: base)
    guard let request = try? HTTPRequest(method: mode & 0x40 != 0 ? .post : .get, url: base,
                                         headerFields: [.authorization: "Bearer secret", .cookie: "a=b"]) else {
        fuzzCheck(false, "the base \(base) does not parse")
        return
    }
    var state = RedirectState(policy: RedirectPolicy())
    let statuses = [301, 302, 303, 307, 308]
    let status = statuses[Int(mode >> 4) % statuses.count]
    guard case .follow(let next, _)? = try? state.decide(request: request, status: status, location: location,
                                                         hasBody: mode & 0x40 != 0, replayableBody: true) else { return }
    var head: [UInt8] = []
    do throws(TransportError) {
        try RequestEncoder.encodeHead(next, body: .none, into: &head)
    } catch {
        fuzzCheck(false, "Location \"\(location)\" from \(base) was followed to a request that does not encode: \(error)")
    }
    HeadShape.check(head)
    guard let target = try? RequestURL(resolved) else {
        fuzzCheck(false, "Location \"\(location)\" was followed, but its resolution \"\(resolved)\" does not parse")
        return
    }
    let origin = try! request.connectionKey()
    if !RedirectState.sameOrigin(target.key, origin) {
        fuzzCheck(next.headerFields[.cookie] == nil && next.headerFields[.authorization] != "Bearer secret",
                  "credentials went from \(origin) to \(target.key) (Location \"\(location)\")")
    }
    // Resolved again, an absolute URL only loses what the first pass could not see: dot
    // segments of the base's own path (RFC 3986 §5.2.2 takes a base as normalized). A third
    // pass changes nothing.
    let again = URLReference.resolve(resolved, against: base)
    let third = URLReference.resolve(again, against: base)
    fuzzCheck(third == again, "resolving \"\(again)\" again gave \"\(third)\"")
}
