import SalvoTransport
import CZlib

/// Content codings a response can carry (RFC 9110 §8.4.1) that this client decodes.
@_spi(Benchmarks) public enum ContentCoding: Sendable, Hashable {
    case gzip
    /// zlib-wrapped deflate (RFC 1950) as the standard says, or raw deflate (RFC 1951) as
    /// some servers send it: told apart by the first two bytes.
    case deflate

    /// The codings of a Content-Encoding value, in the order they were applied. `identity`
    /// (and `none`, which servers send for it, and curl takes as it) is dropped; anything
    /// unknown, or more than two codings, is refused.
    public static func parse(_ value: String) throws(TransportError) -> [ContentCoding] {
        var codings: [ContentCoding] = []
        for element in value.split(separator: ",") {
            let name = element.trimmingOWS.lowercased()
            switch name {
            case "": continue
            case "identity", "none": continue
            case "gzip", "x-gzip": codings.append(.gzip)
            case "deflate": codings.append(.deflate)
            default:
                throw TransportError(.contentDecodingFailed, phase: .readBody,
                                      detail: "unsupported content coding \"\(RequestEncoder.printable(name))\"")
            }
        }
        guard codings.count <= 2 else {
            throw TransportError(.contentDecodingFailed, phase: .readBody,
                                  detail: "\(codings.count) content codings in a chain; at most 2 are decoded")
        }
        return codings
    }
}

/// Streaming gzip/deflate decoding of a response body, with limits against decompression
/// bombs. Loop-confined: one per response, used on its connection's thread.
///
/// Decoded bytes go to a sink in pieces of at most 64 KiB, from one buffer reused for the
/// whole body; the encoded body is never held whole. A sink that returns false pauses
/// decoding: the unread rest of the input is kept until ``resume(into:)``.
@_spi(Benchmarks) public final class ContentDecoder {
    /// Bounds on what a body may decode to.
    public struct Limits: Sendable, Hashable {
        /// Decoded bytes at most (`.decodedBodyTooLarge` past it).
        public var maxDecodedSize: Int
        /// Decoded bytes per encoded byte at most (`.compressionRatioExceeded` past it),
        /// checked once more than `ratioFloor` bytes have been decoded: small bodies of
        /// repeated bytes legitimately compress far better.
        public var maxRatio: Int
        public var ratioFloor: Int

        public init(maxDecodedSize: Int = .max, maxRatio: Int = 200, ratioFloor: Int = 1 << 20) {
            self.maxDecodedSize = maxDecodedSize
            self.maxRatio = maxRatio
            self.ratioFloor = ratioFloor
        }
    }

    public typealias Sink = (UnsafeRawBufferPointer) throws(TransportError) -> Bool

    private let limits: Limits
    /// The stages, outermost coding first (the last applied is the first undone).
    private let stages: [Inflater]
    private var pending = LeftoverBytes()
    public private(set) var decodedCount = 0
    public private(set) var encodedCount = 0

    /// A decoder for a Content-Encoding value; nil when it names nothing to decode.
    public static func make(contentEncoding: String, limits: Limits) throws(TransportError) -> ContentDecoder? {
        let codings = try ContentCoding.parse(contentEncoding)
        if codings.isEmpty { return nil }
        return try ContentDecoder(codings: codings, limits: limits)
    }

    init(codings: [ContentCoding], limits: Limits) throws(TransportError) {
        self.limits = limits
        var stages: [Inflater] = []
        for coding in codings.reversed() {
            stages.append(try Inflater(coding))
        }
        self.stages = stages
    }

    public var hasPendingInput: Bool { !self.pending.isEmpty }

    /// Decodes `input` into `sink`. Returns true when all of it was consumed, false when
    /// the sink paused (the rest is kept for ``resume(into:)``). Input given while paused
    /// is kept behind the rest, untouched.
    public func decode(_ input: UnsafeRawBufferPointer, into sink: Sink) throws(TransportError) -> Bool {
        self.encodedCount += input.count
        if self.hasPendingInput {
            // Still paused (more of the same read arrived, say the next chunk): queue it
            // behind what waits; `resume` takes both in order.
            self.pending.append(input)
            return false
        }
        let used = try self.run(input, into: sink)
        return self.pending.keepUnused(of: input, used: used)
    }

    /// Goes on with input kept by a pause. Returns true once none is left.
    public func resume(into sink: Sink) throws(TransportError) -> Bool {
        try self.pending.offer { (bytes) throws(TransportError) -> Int in try self.run(bytes, into: sink) }
    }

    /// The encoded body ended: hands over what is still held, then checks that every stage
    /// saw its compressed stream's end. An empty body is accepted as empty (servers label
    /// empty answers with an encoding too).
    public func finish(into sink: Sink) throws(TransportError) {
        guard self.encodedCount > 0 else { return }
        // Output zlib still holds after a pause comes out now; the sink takes it regardless
        // of pauses (it is at most a window's worth per stage).
        while self.hasPendingInput {
            _ = try self.resume { (piece) throws(TransportError) -> Bool in _ = try sink(piece); return true }
        }
        try withoutActuallyEscaping(sink) { (sink) throws(TransportError) in
            try self.drainStages { (piece) throws(TransportError) -> Bool in
                _ = try self.deliver(piece, sink)
                return true
            }
        }
        for stage in self.stages where !stage.ended {
            throw TransportError(.contentDecodingFailed, phase: .readBody,
                                  detail: "the compressed body ends before its compressed stream does")
        }
    }

    private func drainStages(_ ignoringPauses: @escaping Sink) throws(TransportError) {
        if self.stages.count == 2 {
            let inner = self.stages[1]
            _ = try inner.drainHeld(ignoringPauses)
            try self.stages[0].drain { (piece) throws(TransportError) -> Bool in
                _ = try inner.inflate(piece, into: ignoringPauses)
                return true
            }
            try inner.drain(into: ignoringPauses)
        } else {
            try self.stages[0].drain(into: ignoringPauses)
        }
    }

    /// Feeds `input` through the stages; returns how much of it was consumed.
    private func run(_ input: UnsafeRawBufferPointer, into sink: Sink) throws(TransportError) -> Int {
        if self.stages.count == 1 {
            return try self.stages[0].inflate(input) { (piece) throws(TransportError) -> Bool in
                try self.deliver(piece, sink)
            }
        }
        // Two stages: the first's output feeds the second. A pause in the second stops the
        // first after its current piece, whose unread rest the second keeps.
        let outer = self.stages[0]
        let inner = self.stages[1]
        if inner.hasHeldInput {
            guard try inner.drainHeld({ (piece) throws(TransportError) -> Bool in try self.deliver(piece, sink) }) else { return 0 }
        }
        return try outer.inflate(input) { (piece) throws(TransportError) -> Bool in
            try inner.inflateHolding(piece) { (decoded) throws(TransportError) -> Bool in try self.deliver(decoded, sink) }
        }
    }

    private func deliver(_ piece: UnsafeRawBufferPointer, _ sink: Sink) throws(TransportError) -> Bool {
        self.decodedCount += piece.count
        if self.decodedCount > self.limits.maxDecodedSize {
            throw TransportError(.decodedBodyTooLarge, phase: .readBody,
                                  detail: "the body decodes to more than \(self.limits.maxDecodedSize) bytes")
        }
        // Against what zlib has taken so far, not what was handed in: a bomb is caught
        // within a buffer of crossing the ratio, however large the read it came in.
        let (allowed, overflow) = self.limits.maxRatio.multipliedReportingOverflow(by: max(self.stages[0].consumedTotal, 1))
        if self.decodedCount > self.limits.ratioFloor && !overflow && self.decodedCount > allowed {
            throw TransportError(.compressionRatioExceeded, phase: .readBody,
                                  detail: "\(self.stages[0].consumedTotal) compressed bytes decode to over \(self.decodedCount); the limit is \(self.limits.maxRatio)×")
        }
        return try sink(piece)
    }
}

/// One zlib inflate stream with its 64 KiB output buffer.
final class Inflater {
    private var stream = z_stream()
    private let coding: ContentCoding
    private var initialized = false
    /// For deflate: the first byte, kept until the second tells zlib-wrapped from raw.
    private var firstByte: UInt8?
    private let output: UnsafeMutableRawBufferPointer
    /// The compressed stream ended (for gzip, the last member so far).
    private(set) var ended = false
    /// Compressed bytes zlib has taken, over every member.
    private(set) var consumedTotal = 0
    /// Input of this stage that a paused sink left unread (second stage of a chain only).
    private var held = LeftoverBytes()

    static let outputSize = 64 * 1024

    init(_ coding: ContentCoding) throws(TransportError) {
        self.coding = coding
        self.output = .allocate(byteCount: Self.outputSize, alignment: 16)
        if coding == .gzip { try self.start(windowBits: 16 + 15) }
    }

    deinit {
        if self.initialized { inflateEnd(&self.stream) }
        self.output.deallocate()
    }

    private func start(windowBits: Int32) throws(TransportError) {
        guard salvo_inflateInit2(&self.stream, windowBits) == Z_OK else {
            throw TransportError(.contentDecodingFailed, phase: .readBody, detail: "zlib cannot start inflating")
        }
        self.initialized = true
    }

    var hasHeldInput: Bool { !self.held.isEmpty }

    /// Inflates all of `input` into `sink` unless the sink pauses; returns bytes consumed.
    func inflate(_ input: UnsafeRawBufferPointer, into sink: ContentDecoder.Sink) throws(TransportError) -> Int {
        guard !input.isEmpty else { return 0 }
        if !self.initialized {
            // deflate: a zlib header (method 8, CMF·256+FLG a multiple of 31), else raw.
            if let first = self.firstByte {
                try self.start(windowBits: Self.isZlibHeader(first, input[0]) ? 15 : -15)
                self.firstByte = nil
                var lead = first
                _ = try withUnsafeBytes(of: &lead) { (one) throws(TransportError) -> Int in try self.inflateSome(one, into: sink) }
            } else if input.count == 1 {
                self.firstByte = input[0]
                return 1
            } else {
                try self.start(windowBits: Self.isZlibHeader(input[0], input[1]) ? 15 : -15)
            }
        }
        return try self.inflateSome(input, into: sink)
    }

    static func isZlibHeader(_ cmf: UInt8, _ flg: UInt8) -> Bool {
        cmf & 0x0F == 8 && cmf >> 4 <= 7 && (UInt16(cmf) << 8 | UInt16(flg)) % 31 == 0
    }

    /// Hands over output zlib still holds for input it already took (after a pause).
    func drain(into sink: ContentDecoder.Sink) throws(TransportError) {
        guard self.initialized else { return }
        _ = try self.inflateSome(UnsafeRawBufferPointer(start: nil, count: 0), into: sink, ignoringPauses: true)
    }

    private func inflateSome(_ input: UnsafeRawBufferPointer, into sink: ContentDecoder.Sink,
                             ignoringPauses: Bool = false) throws(TransportError) -> Int {
        var consumed = 0
        while consumed < input.count {
            if self.ended {
                if self.coding == .gzip && input[consumed] == 0x1F {
                    // Another gzip member follows: decode it too.
                    inflateReset(&self.stream)
                    self.ended = false
                } else {
                    // Bytes after the end (padding some servers add): ignored, as curl does.
                    return input.count
                }
            }
            self.stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self) + consumed)
            self.stream.avail_in = uInt(input.count - consumed)
            self.stream.next_out = self.output.baseAddress!.assumingMemoryBound(to: Bytef.self)
            self.stream.avail_out = uInt(self.output.count)
            let status = CZlib.inflate(&self.stream, Z_NO_FLUSH)
            let used = input.count - consumed - Int(self.stream.avail_in)
            consumed += used
            self.consumedTotal += used
            let produced = self.output.count - Int(self.stream.avail_out)
            switch status {
            case Z_OK, Z_BUF_ERROR:
                break
            case Z_STREAM_END:
                self.ended = true
            default:
                let reason = self.stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw TransportError(.contentDecodingFailed, phase: .readBody, detail: "corrupt \(self.coding) data: \(reason)")
            }
            if produced > 0 {
                if try !sink(UnsafeRawBufferPointer(start: self.output.baseAddress, count: produced)) {
                    // Paused. zlib may still hold output for input it already took; it comes
                    // out on the next call, so stop here only once it has taken no more.
                    return consumed
                }
            } else if used == 0 && status == Z_BUF_ERROR {
                return consumed
            }
        }
        // Input taken, but zlib may hold more output than fit in one buffer.
        while !self.ended {
            self.stream.next_in = nil
            self.stream.avail_in = 0
            self.stream.next_out = self.output.baseAddress!.assumingMemoryBound(to: Bytef.self)
            self.stream.avail_out = uInt(self.output.count)
            let status = CZlib.inflate(&self.stream, Z_NO_FLUSH)
            let produced = self.output.count - Int(self.stream.avail_out)
            if status == Z_STREAM_END { self.ended = true }
            if status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR {
                let reason = self.stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw TransportError(.contentDecodingFailed, phase: .readBody, detail: "corrupt \(self.coding) data: \(reason)")
            }
            if produced == 0 { break }
            if try !sink(UnsafeRawBufferPointer(start: self.output.baseAddress, count: produced)) && !ignoringPauses { break }
        }
        return consumed
    }

    /// For the second stage of a chain: inflates `input`, keeping what a pause left unread;
    /// returns false when paused (the first stage then stops).
    func inflateHolding(_ input: UnsafeRawBufferPointer, into sink: ContentDecoder.Sink) throws(TransportError) -> Bool {
        let used = try self.inflate(input, into: sink)
        return self.held.keepUnused(of: input, used: used)
    }

    /// Inflates input held by a pause; true once none is left.
    func drainHeld(_ sink: ContentDecoder.Sink) throws(TransportError) -> Bool {
        try self.held.offer { (bytes) throws(TransportError) -> Int in try self.inflate(bytes, into: sink) }
    }
}

/// Input a paused sink left unread, copied out of the read buffer it came in.
struct LeftoverBytes {
    private var bytes: [UInt8] = []
    private var offset = 0

    var isEmpty: Bool { self.offset >= self.bytes.count }

    /// Keeps what `used` left of `input`; true when nothing was left.
    mutating func keepUnused(of input: UnsafeRawBufferPointer, used: Int) -> Bool {
        guard used < input.count else { return true }
        self.bytes = Array(input[used...])
        self.offset = 0
        return false
    }

    /// Keeps `more` behind what is already kept.
    mutating func append(_ more: UnsafeRawBufferPointer) {
        if self.offset > 0 {
            self.bytes.removeFirst(self.offset)
            self.offset = 0
        }
        self.bytes.append(contentsOf: more)
    }

    /// Offers the kept bytes to `consume`, which says how many it took; true once none is left.
    mutating func offer(_ consume: (UnsafeRawBufferPointer) throws(TransportError) -> Int) throws(TransportError) -> Bool {
        guard !self.isEmpty else { return true }
        let start = self.offset
        let used = try self.bytes.withBytes { (bytes) throws(TransportError) -> Int in
            try consume(UnsafeRawBufferPointer(rebasing: bytes[start...]))
        }
        self.offset += used
        guard self.isEmpty else { return false }
        self.bytes = []
        self.offset = 0
        return true
    }
}

extension Substring {
    /// Without the optional whitespace (spaces and tabs) around it.
    package var trimmingOWS: Substring {
        var s = self
        while let first = s.first, first == " " || first == "\t" { s = s.dropFirst() }
        while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
        return s
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a body that throws ``TransportError`` (the standard one
    /// rethrows untyped).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(TransportError) -> R) throws(TransportError) -> R {
        let result = self.withUnsafeBytes { bytes in
            Result { () throws(TransportError) -> R in try body(bytes) }
        }
        return try result.get()
    }
}
