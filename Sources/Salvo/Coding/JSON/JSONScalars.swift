import Foundation

/// Reading the scalars of a ``JSONTape``: strings (escapes, UTF-8 checked) and numbers
/// (exact, range-checked).
extension JSONTape {
    /// The text of a string entry.
    ///
    /// - Throws: `nil` reason on bad UTF-8 or a lone surrogate, as a message for the caller's error.
    func string(_ entry: Entry) -> Result<String, JSONScalarError> {
        let raw = self.rawBytes(of: entry)
        if !entry.escaped {
            // The scan checked the UTF-8 already.
            return .success(String(decoding: raw, as: UTF8.self))
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(raw.count)
        var index = 0
        while index < raw.count {
            let byte = raw[index]
            guard byte == UInt8(ascii: "\\") else {
                decoded.append(byte)
                index += 1
                continue
            }
            let escape = raw[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = Self.hex4(raw, at: index)
                index += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    // A high surrogate must be followed by an escaped low one.
                    guard index + 6 <= raw.count, raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u") else {
                        return .failure(.loneSurrogate)
                    }
                    let low = Self.hex4(raw, at: index + 2)
                    guard (0xDC00..<0xE000).contains(low) else { return .failure(.loneSurrogate) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                } else if (0xDC00..<0xE000).contains(scalar) {
                    return .failure(.loneSurrogate)
                }
                guard let unicode = Unicode.Scalar(scalar) else { return .failure(.loneSurrogate) }
                decoded.append(contentsOf: UTF8.encode(unicode)!)
            default:
                // `"`, `\` and `/` stand for themselves (the scan allowed no others).
                decoded.append(escape)
            }
        }
        guard let text = String(validating: decoded, as: UTF8.self) else { return .failure(.invalidUTF8) }
        return .success(text)
    }

    /// Whether a string entry's text equals `key`, comparing UTF-8 bytes without making a
    /// String unless the entry has text outside ASCII.
    @inline(__always)
    func stringEquals(_ entry: Entry, _ key: inout String) -> Bool {
        if entry.escaped {
            guard case .success(let text) = self.string(entry) else { return false }
            return text == key
        }
        let length = Int(entry.end - entry.start)
        let same = key.withUTF8 { utf8 -> Bool in
            guard utf8.count == length else { return false }
            let wire = self.bytes.baseAddress! + Int(entry.start)
            // Keys are short: a loop beats a call to memcmp.
            for index in 0..<length where wire.load(fromByteOffset: index, as: UInt8.self) != utf8[index] {
                return false
            }
            return true
        }
        if same || !entry.nonASCII { return same }
        // Non-ASCII text may be the same string in another normalization ("é" as one scalar
        // or two): compared as Swift compares strings, as JSONDecoder's dictionary does.
        return String(decoding: self.rawBytes(of: entry), as: UTF8.self) == key
    }

    private static func hex4(_ raw: UnsafeRawBufferPointer, at index: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = raw[index + offset]
            let digit: UInt32 = switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            default: UInt32(byte - UInt8(ascii: "A") + 10)
            }
            value = value << 4 | digit
        }
        return value
    }

    // MARK: Numbers

    /// A number entry as `T`: whole numbers directly, others (`1.0`, `1e3`) when they are
    /// exactly a value of `T`.
    func integer<T: FixedWidthInteger>(_ entry: Entry, as type: T.Type) -> T? {
        let raw = self.rawBytes(of: entry)
        var index = 0
        let negative = raw[0] == UInt8(ascii: "-")
        if negative {
            // Only a zero is negative and unsigned: "-0", "-0.0", "-0e5".
            guard T.isSigned else { return Self.exactInteger(raw, as: T.self) }
            index = 1
        }
        var value: T = 0
        while index < raw.count {
            let byte = raw[index]
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else {
                // A fraction or an exponent: exact only.
                return Self.exactInteger(raw, as: T.self)
            }
            let digit = T(byte - UInt8(ascii: "0"))
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            // Too many digits — unless a fraction or an exponent brings the value back in range.
            guard !overflow1 && !overflow2 else { return Self.exactInteger(raw, as: T.self) }
            value = next
            index += 1
        }
        return value
    }

    /// `1.0`, `12e3`, `1.5e1` as `T` when the text is exactly a whole number of `T`, digit
    /// by digit (a `Double` would round numbers past 2^53).
    private static func exactInteger<T: FixedWidthInteger>(_ raw: UnsafeRawBufferPointer, as type: T.Type) -> T? {
        var index = 0
        let negative = raw[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var digits: [UInt8] = []
        var exponent = 0
        var seenPoint = false
        while index < raw.count {
            let byte = raw[index]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                if !digits.isEmpty || byte != UInt8(ascii: "0") { digits.append(byte - UInt8(ascii: "0")) }
                if seenPoint { exponent -= 1 }
            } else if byte == UInt8(ascii: ".") {
                seenPoint = true
            } else {
                index += 1
                var sign = 1
                if raw[index] == UInt8(ascii: "-") { sign = -1; index += 1 } else if raw[index] == UInt8(ascii: "+") { index += 1 }
                var written = 0
                while index < raw.count {
                    written = min(written * 10 + Int(raw[index] - UInt8(ascii: "0")), 1_000_000)
                    index += 1
                }
                exponent += sign * written
                break
            }
            index += 1
        }
        while exponent < 0, digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty { return 0 }
        guard exponent >= 0, digits.count + exponent <= 40, !negative || T.isSigned else { return nil }
        var value: T = 0
        for digit in digits + repeatElement(0, count: exponent) {
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(T(digit)) : shifted.addingReportingOverflow(T(digit))
            guard !overflow1 && !overflow2 else { return nil }
            value = next
        }
        return value
    }

    private static let powersOfTen: [Double] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
                                                 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]

    /// A number entry as the nearest `Double` (infinity when it is out of range).
    func double(_ entry: Entry) -> Double? {
        let raw = self.rawBytes(of: entry)
        // Exact fast path (Clinger): at most 15 significant digits and a small power of ten.
        var mantissa: UInt64 = 0
        var digits = 0
        var exponent = 0
        var index = 0
        let negative = raw[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var fast = true
        var seenPoint = false
        while index < raw.count {
            let byte = raw[index]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                if mantissa != 0 || byte != UInt8(ascii: "0") { digits += 1 }
                if digits > 15 { fast = false; break }
                mantissa = mantissa * 10 + UInt64(byte - UInt8(ascii: "0"))
                if seenPoint { exponent -= 1 }
            } else if byte == UInt8(ascii: ".") {
                seenPoint = true
            } else {
                // An exponent.
                var sign = 1
                index += 1
                if raw[index] == UInt8(ascii: "-") { sign = -1; index += 1 } else if raw[index] == UInt8(ascii: "+") { index += 1 }
                var value = 0
                while index < raw.count {
                    value = value * 10 + Int(raw[index] - UInt8(ascii: "0"))
                    if value > 1000 { fast = false; break }
                    index += 1
                }
                exponent += sign * value
                break
            }
            index += 1
        }
        if fast && abs(exponent) <= 22 {
            var value = Double(mantissa)
            value = exponent < 0 ? value / Self.powersOfTen[-exponent] : value * Self.powersOfTen[exponent]
            return negative ? -value : value
        }
        guard let value = Double(String(decoding: raw, as: UTF8.self)) else { return nil }
        if value == 0 && Self.hasNonZeroDigit(raw) {
            // Too small to be told from zero: not representable, as JSONDecoder says.
            return nil
        }
        return value
    }

    static func hasNonZeroDigit(_ raw: UnsafeRawBufferPointer) -> Bool {
        for byte in raw {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return false }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }

    /// A number entry's text, as written.
    func numberText(_ entry: Entry) -> String {
        String(decoding: self.rawBytes(of: entry), as: UTF8.self)
    }
}

/// Why a string could not be read.
enum JSONScalarError: Error {
    case invalidUTF8
    case loneSurrogate

    var message: String {
        switch self {
        case .invalidUTF8: "a string that is not valid UTF-8"
        case .loneSurrogate: "a \\u escape with an unpaired surrogate"
        }
    }
}
