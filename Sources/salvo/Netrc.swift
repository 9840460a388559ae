import HTTPTypes
import SalvoCore
#if canImport(Glibc)
import Glibc
#endif

/// A netrc file, read as curl 7.88 reads it: tokens between spaces, tabs and line ends;
/// `machine NAME`, `default`, `login`, `password` and `account` (each with a value), and
/// `macdef NAME` whose lines are skipped up to an empty one. A token in double quotes may hold
/// spaces, and in it `\n`, `\r` and `\t` are a line end, a carriage return and a tab, and a
/// backslash before any other character is that character.
struct Netrc: Sendable {
    struct Entry: Sendable, Equatable {
        var login: [UInt8]?
        var password: [UInt8]?
    }

    /// The `machine` entries in file order (host lower-cased), then the `default` one.
    private(set) var machines: [(host: String, entry: Entry)] = []
    private(set) var fallback: Entry?

    init(_ bytes: [UInt8]) {
        var tokens = Tokens(bytes)
        // nil: between entries (or after a `default`'s last token, nothing follows it).
        var current: (host: String?, entry: Entry)? = nil
        func close() {
            guard let (host, entry) = current else { return }
            if let host { self.machines.append((host, entry)) } else if self.fallback == nil { self.fallback = entry }
            current = nil
        }
        while let token = tokens.next() {
            switch String(decoding: token, as: UTF8.self) {
            case "machine":
                close()
                guard let name = tokens.next() else { return }
                current = (String(decoding: name, as: UTF8.self).lowercased(), Entry())
            case "default":
                close()
                current = (nil, Entry())
            case "login":
                guard let value = tokens.next() else { close(); return }
                current?.entry.login = value
            case "password":
                guard let value = tokens.next() else { close(); return }
                current?.entry.password = value
            case "account":
                _ = tokens.next()
            case "macdef":
                _ = tokens.next()
                tokens.skipMacro()
            default:
                break  // an unknown word: passed over
            }
        }
        close()
    }

    /// The credentials for `host`: the first `machine` that names it (in any case), else the
    /// `default` entry; nil when neither gives a login or a password.
    func entry(for host: String) -> Entry? {
        let name = host.lowercased()
        let found = self.machines.first { $0.host == name }?.entry ?? self.fallback
        guard let found, found.login != nil || found.password != nil else { return nil }
        return found
    }

    /// `login:password` for Basic (a password alone goes with an empty login, as curl sends it).
    func basicCredentials(for host: String) -> [UInt8]? {
        self.entry(for: host).map(Self.basic)
    }

    private static func basic(_ entry: Entry) -> [UInt8] {
        (entry.login ?? []) + [UInt8(ascii: ":")] + (entry.password ?? [])
    }

    /// Every host the file names, with its Basic value, and the default's: what a redirect to
    /// another host may use.
    func authorizations() -> (byHost: [String: String], otherHosts: String?) {
        var byHost: [String: String] = [:]
        for (host, _) in self.machines where byHost[host] == nil {
            if let credentials = self.basicCredentials(for: host) { byHost[host] = "Basic " + Base64.encode(credentials) }
        }
        let other = self.fallback.flatMap { entry in
            entry.login == nil && entry.password == nil ? nil : "Basic " + Base64.encode(Self.basic(entry))
        }
        return (byHost, other)
    }

    private struct Tokens {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

        mutating func next() -> [UInt8]? {
            while self.index < self.bytes.count, Self.isSpace(self.bytes[self.index]) { self.index += 1 }
            guard self.index < self.bytes.count else { return nil }
            var token: [UInt8] = []
            if self.bytes[self.index] == UInt8(ascii: "\"") {
                self.index += 1
                while self.index < self.bytes.count {
                    let byte = self.bytes[self.index]
                    self.index += 1
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == UInt8(ascii: "\\"), self.index < self.bytes.count {
                        let escaped = self.bytes[self.index]
                        self.index += 1
                        switch escaped {
                        case UInt8(ascii: "n"): token.append(0x0A)
                        case UInt8(ascii: "r"): token.append(0x0D)
                        case UInt8(ascii: "t"): token.append(0x09)
                        default: token.append(escaped)
                        }
                    } else {
                        token.append(byte)
                    }
                }
                return token
            }
            while self.index < self.bytes.count, !Self.isSpace(self.bytes[self.index]) {
                token.append(self.bytes[self.index])
                self.index += 1
            }
            return token
        }

        /// Past the rest of the line and every line up to and including an empty one.
        mutating func skipMacro() {
            while self.index < self.bytes.count, self.bytes[self.index] != 0x0A { self.index += 1 }
            while self.index < self.bytes.count {
                self.index += 1  // the line end
                if self.index < self.bytes.count, self.bytes[self.index] == 0x0A { self.index += 1; return }
                if self.index + 1 < self.bytes.count, self.bytes[self.index] == 0x0D, self.bytes[self.index + 1] == 0x0A {
                    self.index += 2; return
                }
                while self.index < self.bytes.count, self.bytes[self.index] != 0x0A { self.index += 1 }
            }
        }
    }
}

extension Get {
    /// The netrc file the options name (nil without --netrc, --netrc-file or
    /// --netrc-optional). A file that cannot be read gives no credentials and no error, as
    /// with curl 7.88.
    var netrcCredentials: Netrc? {
        guard self.netrc || self.netrcOptional || self.netrcFile != nil else { return nil }
        let path: String
        if let netrcFile {
            path = netrcFile
        } else {
            guard let home = Self.environment("HOME") else { return nil }
            path = home + "/.netrc"
        }
        return Output.readFile(path).map(Netrc.init)
    }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}

extension Netrc {
    /// Basic credentials for the request's host, unless -u or the URL's userinfo gave some;
    /// a URL with a user and no password (or an empty one) gets the password of that user's
    /// entry for the host, as with curl. A password in the URL is kept (curl 7.88 would take
    /// the entry's in its place).
    func apply(to request: inout HTTPRequest, user: String?, url: String) {
        guard user == nil, let parsed = try? RequestURL(url) else { return }
        if let name = parsed.user {
            guard (parsed.password ?? "").isEmpty else { return }
            let login = URLReference.percentDecoded(name)
            let host = parsed.key.host.lowercased()
            // The host's own entries, else the default one, as for a URL without a user.
            let named = self.machines.filter { $0.host == host }.map(\.entry)
            let entries = named.isEmpty ? (self.fallback.map { [$0] } ?? []) : named
            guard let password = entries.first(where: { $0.login == login })?.password else { return }
            request.headerFields[.authorization] = "Basic " + Base64.encode(login + [UInt8(ascii: ":")] + password)
            return
        }
        guard request.headerFields[.authorization] == nil,
              let credentials = self.basicCredentials(for: parsed.key.host) else { return }
        request.headerFields[.authorization] = "Basic " + Base64.encode(credentials)
    }

    /// Each host's own entry for the redirects (none when -u gave the credentials: -u wins).
    func applyToRedirects(_ policy: inout RedirectPolicy, user: String?) {
        guard user == nil, policy.follow else { return }
        (policy.authorizationByHost, policy.authorizationForOtherHosts) = self.authorizations()
    }
}
