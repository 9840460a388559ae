/// The options of a `salvo get` command line in the order they were typed, each value with
/// its bytes as given.
///
/// The argument parser keeps the values of one option in order, but not how the options
/// interleave, and several of curl's rules depend on exactly that: each `-o`, `-O` and `-T`
/// takes the next URL that has none yet, and `-d`, `--data-binary` and `--data-urlencode`
/// are joined in the order given. It reads the command line as ``normalized(_:)`` left it,
/// after the parser has accepted it, so it only needs to know which options take a value.
struct OptionOrder {
    struct Option: Equatable {
        /// The short letter (`o`), or the long name without dashes (`data-binary`) of an
        /// option that has no letter.
        var name: String
        /// The value's bytes; nil for a flag.
        var value: [UInt8]?
    }

    /// Short options of `salvo get` that take a value.
    static let shortWithValue: Set<UInt8> = Set("XHdToDwmuxU".utf8)

    /// Long options of `salvo get` that take a value (a test checks this against the help).
    static let longWithValue: Set<String> = [
        "request", "header", "data", "data-ascii", "data-binary", "data-raw", "data-urlencode",
        "held-data-limit", "upload-file", "output", "output-dir", "dump-header", "write-out",
        "max-time", "connect-timeout", "resolve", "user", "netrc-file", "proxy", "proxy-user",
        "noproxy", "unix-socket", "cacert", "capath", "cert", "key", "pinnedpubkey",
        "max-filesize", "max-redirs", "parallel-max",
    ]

    /// The letter of each long option that has one, so that callers ask by one spelling.
    static let shortForLong: [String: String] = [
        "request": "X", "header": "H", "data": "d", "upload-file": "T", "output": "o",
        "dump-header": "D", "write-out": "w", "max-time": "m", "user": "u", "proxy": "x",
        "proxy-user": "U", "remote-name": "O", "remote-header-name": "J", "include": "i",
        "head": "I", "silent": "s", "show-error": "S", "verbose": "v", "fail": "f",
        "location": "L", "insecure": "k", "netrc": "n", "proxytunnel": "p", "ipv4": "4",
        "ipv6": "6", "get": "G", "parallel": "Z",
    ]

    let options: [Option]
    /// The arguments that are not options (the URLs), as typed.
    let positionals: [[UInt8]]

    /// Reads `arguments` (the program's own name and the subcommand's left out) written as
    /// ``normalized(_:)`` writes them: each option alone, its value attached after `=` or
    /// the next argument.
    init(normalized arguments: some Sequence<[UInt8]>) {
        var options: [Option] = []
        var positionals: [[UInt8]] = []
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard argument.count > 1, argument[0] == UInt8(ascii: "-") else {
                positionals.append(argument)
                continue
            }
            if argument == Array("--".utf8) {
                while let rest = iterator.next() { positionals.append(rest) }
                break
            }
            let body = argument.dropFirst(argument[1] == UInt8(ascii: "-") ? 2 : 1)
            let equals = body.firstIndex(of: UInt8(ascii: "="))
            let name = String(decoding: body[..<(equals ?? body.endIndex)], as: UTF8.self)
            var value = equals.map { Array(body[($0 + 1)...]) }
            if value == nil, Self.takesValue(name) { value = iterator.next() ?? [] }
            options.append(Option(name: Self.canonical(name), value: value))
        }
        self.options = options
        self.positionals = positionals
    }

    private static func takesValue(_ name: String) -> Bool {
        name.utf8.count == 1 ? self.shortWithValue.contains(name.utf8.first!) : self.longWithValue.contains(name)
    }

    /// The command line of this process, after `salvo get`.
    static let commandLine = OptionOrder(normalized: RawArguments.all.dropFirst(2))

    private static func canonical(_ name: String) -> String {
        self.shortForLong[name] ?? name
    }

    /// The options named `names` (short letters, or long names of options without one), in
    /// order.
    func named(_ names: Set<String>) -> [Option] {
        self.options.filter { names.contains($0.name) }
    }

    /// The values given to the option `name`, in order.
    func values(_ name: String) -> [[UInt8]] {
        self.named([name]).map { $0.value ?? [] }
    }

    /// curl's spellings of a `salvo get` command line in the ones the argument parser reads,
    /// with the same meaning: a value joined to its letter, alone or after a cluster of flags
    /// (`-oFILE`, `-sLoFILE`), is given on its own (`-o FILE`); a value that starts with a
    /// dash (`-d -x`, `--resolve -host:80`, which curl takes as the value it is) is attached
    /// (`-d=-x`, `--resolve=-host:80`); a cluster of flags becomes one flag each. After `--`
    /// nothing is read. (curl's `-o=x` names a file `=x`; so does this.)
    static func normalized(_ arguments: some Sequence<[UInt8]>) -> [[UInt8]] {
        var output: [[UInt8]] = []
        var iterator = arguments.makeIterator()
        let dash = UInt8(ascii: "-")
        let equals = UInt8(ascii: "=")
        while let argument = iterator.next() {
            guard argument.count > 1, argument[0] == dash else {
                output.append(argument)
                continue
            }
            if argument == [dash, dash] {
                output.append(argument)
                while let rest = iterator.next() { output.append(rest) }
                break
            }
            if argument[1] == dash {
                if let at = argument.firstIndex(of: equals) {
                    // `--name=value`; an empty value given apart, or the parser would take
                    // the next argument for it.
                    output += at == argument.count - 1 ? [Array(argument[..<at]), []] : [argument]
                } else if Self.longWithValue.contains(String(decoding: argument.dropFirst(2), as: UTF8.self)),
                          let value = iterator.next() {
                    output += Self.option(argument, value)
                } else {
                    output.append(argument)
                }
                continue
            }
            // A cluster of letters only: anything else (`-s-`, `-=`) goes to the parser as it
            // is, to be refused.
            let letters = argument.dropFirst().prefix { !Self.shortWithValue.contains($0) }
            guard letters.allSatisfy({ Self.isLetterOrDigit($0) }),
                  argument.count == 1 + letters.count || Self.isLetterOrDigit(argument[1 + letters.count]) else {
                output.append(argument)
                continue
            }
            var index = 1
            while index < argument.count {
                let letter = argument[index]
                if Self.shortWithValue.contains(letter) {
                    let rest = Array(argument[(index + 1)...])
                    if !rest.isEmpty {
                        output += Self.option([dash, letter], rest)
                    } else if let value = iterator.next() {
                        output += Self.option([dash, letter], value)
                    } else {
                        output.append([dash, letter])  // the parser says the value is missing
                    }
                    break
                }
                output.append([dash, letter])
                index += 1
            }
        }
        return output
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// `option` and its `value` as the parser takes them: apart, or attached when the value
    /// would look like an option (an empty one stays apart: attached, the parser would take
    /// the next argument for it).
    private static func option(_ option: [UInt8], _ value: [UInt8]) -> [[UInt8]] {
        value.first == UInt8(ascii: "-") ? [option + [UInt8(ascii: "=")] + value] : [option, value]
    }
}
