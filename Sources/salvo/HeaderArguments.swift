import HTTPTypes
import SalvoCore

/// `-H` arguments as curl reads them:
/// - `Name: value` adds a field (the value's bytes as typed: not every value is UTF-8);
/// - `Name:` removes the field, the ones salvo would add included;
/// - `Name;` sends the field with an empty value;
/// - `@file` reads one such argument per line of the file (`@-`: standard input); a file
///   that cannot be read is warned about and sends nothing;
/// - an argument with neither colon nor semicolon is ignored, and one whose name is not a
///   token (spaces, bytes outside ASCII) is skipped with a warning, as curl does.
struct HeaderArguments {
    var fields = HTTPFields()
    /// Lowercased names removed with `Name:`.
    var removed: Set<String> = []
    var warnings: [String] = []

    init(_ arguments: [[UInt8]]) throws {
        for argument in arguments {
            if argument.first == UInt8(ascii: "@") {
                let path = String(decoding: argument.dropFirst(), as: UTF8.self)
                guard let contents = Output.readFile(path == "-" ? nil : path) else {
                    // As curl: said, and the request goes on without them.
                    self.warnings.append("cannot read headers from \(path); sending none from it")
                    continue
                }
                for line in contents.split(separator: 0x0A, omittingEmptySubsequences: true) {
                    try self.add(Array(line.last == 0x0D ? line.dropLast() : line))
                }
            } else {
                try self.add(argument)
            }
        }
    }

    private mutating func add(_ bytes: [UInt8]) throws {
        let colon = bytes.firstIndex(of: UInt8(ascii: ":"))
        let nameEnd: Int
        let emptyField: Bool
        if let colon {
            nameEnd = colon
            emptyField = false
        } else if bytes.last == UInt8(ascii: ";") {
            nameEnd = bytes.count - 1
            emptyField = true
        } else {
            return   // neither a field nor a removal: curl sends nothing for it
        }
        let nameText = String(decoding: bytes[..<nameEnd], as: UTF8.self)
        guard bytes[..<nameEnd].allSatisfy({ $0 < 0x80 }), let name = HTTPField.Name(String(nameText[...].trimmingOWS)) else {
            self.warnings.append("header \"\(nameText)\" skipped: its name is not a valid field name")
            return
        }
        if emptyField {
            self.fields.append(HTTPField(name: name, value: ""))
            return
        }
        var value = bytes[(nameEnd + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        if value.isEmpty {
            self.removed.insert(name.canonicalName)
            self.fields[name] = nil
            return
        }
        guard !value.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
            throw TransportError(.invalidRequest, detail: "header \(nameText) contains CR, LF or NUL")
        }
        self.fields.append(HTTPField(name: name, value: value))
    }
}
