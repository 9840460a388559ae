import ArgumentParser
import SalvoTransport
#if canImport(Glibc)
import Glibc
#endif

@main
struct SalvoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvo",
        abstract: "A fast HTTP/1.1 client and load generator.",
        version: SalvoVersion.string,
        subcommands: [Get.self, Bench.self, Merge.self, Demo.self]
    )

    static func main() async {
        // A closed stdout is a write error (curl's exit 23), not a signal that ends the
        // program. (The library never raises SIGPIPE itself; this is about our own output.)
        signal(SIGPIPE, SIG_IGN)
        let command: any ParsableCommand
        do {
            command = try self.parseAsRoot(RawArguments.parsed)
        } catch {
            // `salvo get` speaks curl: a bad option or value is curl's exit 2.
            if CommandLine.arguments.dropFirst().first == "get", self.exitCode(for: error) == .validationFailure {
                Output.stderr(self.fullMessage(for: error) + "\n")
                Glibc.exit(2)
            }
            self.exit(withError: error)
        }
        do {
            var command = command
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            self.exit(withError: error)
        }
    }
}
