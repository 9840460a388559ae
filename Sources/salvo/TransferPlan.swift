/// The transfers of one `salvo get` command line: one per URL, each with where its body goes
/// and whether it carries the upload.
///
/// curl's rules: each `-o FILE` and each `-O` takes the next URL that has no output yet, in
/// the order the options were typed (wherever they stand among the URLs); a URL left over
/// goes to stdout, or to its remote name with `--remote-name-all`. An output option with no
/// URL left is warned about and ignored. Each `-T` takes the next URL the same way; the
/// other URLs are fetched with the method they would have had without it.
struct TransferPlan {
    enum Destination: Equatable {
        case standardOutput
        /// `-o`: this path (under --output-dir unless absolute; "-" is stdout).
        case file(String)
        /// `-O`: the URL's last path segment, or with -J the response's file name.
        case remoteName
    }

    struct Transfer: Equatable {
        /// The URL's place on the command line, from 0.
        var index: Int
        /// The URL's bytes as typed.
        var url: [UInt8]
        var destination: Destination
        /// The file this transfer uploads (`-T`; "-" is standard input).
        var upload: String?
    }

    let transfers: [Transfer]
    /// How many output options found no URL (curl warns about them).
    let unusedOutputs: Int

    /// `urls` as the parser read them; their bytes come from `options` when it saw as many.
    init(urls: [String], options: OptionOrder, remoteNameAll: Bool, uploads: [String]) {
        let typed = options.positionals.count == urls.count ? options.positionals : urls.map { Array($0.utf8) }
        let destinations: [Destination] = options.named(["o", "O"]).map { option in
            guard let value = option.value else { return .remoteName }
            return .file(String(decoding: value, as: UTF8.self))
        }
        let otherwise: Destination = remoteNameAll ? .remoteName : .standardOutput
        self.transfers = typed.enumerated().map { index, url in
            Transfer(index: index, url: url, destination: index < destinations.count ? destinations[index] : otherwise,
                     upload: index < uploads.count ? uploads[index] : nil)
        }
        self.unusedOutputs = max(0, destinations.count - urls.count)
    }
}
