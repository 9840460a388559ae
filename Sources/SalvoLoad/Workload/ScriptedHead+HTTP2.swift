import HTTPTypes
import SalvoCore

/// A call's request as an HTTP/2 header list: names and values back to back in one buffer,
/// where each lies in it, and where the body begins after them.
struct ScriptedHTTP2Request {
    var spans: [(name: Range<Int>, value: Range<Int>)] = []
    var bodyStart = 0
}

extension ScriptedHead {
    /// Writes `request` as a header list (`:method`, `:scheme`, `:authority`, `:path`, the
    /// run's fields, the call's, a Content-Length) and its body into `buffer`, checked as
    /// ``encode(_:into:)`` checks it; says whether it is a HEAD, or what keeps it from being sent.
    func encodeHTTP2(_ request: ScriptedRequest, into buffer: ScriptBuffer, list: inout ScriptedHTTP2Request) -> Result<Bool, ScriptFailure> {
        buffer.count = 0
        list.spans.removeAll(keepingCapacity: true)
        func add(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
            let nameStart = buffer.count
            buffer.append(name)
            let valueStart = buffer.count
            buffer.append(value)
            list.spans.append((nameStart..<valueStart, valueStart..<buffer.count))
        }
        func add(_ name: [UInt8], _ value: [UInt8]) {
            name.withUnsafeBytes { name in value.withUnsafeBytes { add(name, $0) } }
        }
        func add(_ name: StaticString, _ value: UnsafeRawBufferPointer) {
            add(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value)
        }
        var method = request.method.rawValue
        let meaning = method.withUTF8 { bytes in
            add(":method", UnsafeRawBufferPointer(bytes))
            return Self.meaning(ofMethod: bytes)
        }
        let (isHead, announcesBody) = (meaning.isHead, meaning.announcesBody)
        for (name, value) in self.http2Pseudo ?? [] { add(name, value) }
        var path = request.path
        if let failure = path.withUTF8({ bytes -> ScriptFailure? in
            if let failure = Self.checkTarget(bytes, method: meaning, absolute: false) { return failure }
            add(":path", UnsafeRawBufferPointer(bytes))
            return nil
        }) { return .failure(failure) }
        for (name, value) in self.http2Fields ?? [] { add(name, value) }
        for field in request.headerFields {
            if let failure = self.refusal(of: field) { return .failure(failure) }
            var name = field.name.canonicalName   // lowercase, as HTTP/2 requires
            var value = field.value
            name.withUTF8 { name in value.withUTF8 { add(UnsafeRawBufferPointer(name), UnsafeRawBufferPointer($0)) } }
        }
        if !request.body.isEmpty || announcesBody {
            var length = String(request.body.count)
            length.withUTF8 { add("content-length", UnsafeRawBufferPointer($0)) }
        }
        list.bodyStart = buffer.count
        buffer.append(request.body)
        return .success(isHead)
    }
}
