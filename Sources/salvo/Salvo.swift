import ArgumentParser

@main
struct SalvoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvo",
        abstract: "A fast HTTP/1.1 client and load generator.",
        subcommands: [Get.self, Bench.self, Merge.self, Demo.self]
    )
}
