import ArgumentParser
import Foundation
import SalvoLoad

/// `salvo merge`: one report from several `salvo bench --json` runs, from their histograms.
struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Merge the JSON reports of several bench runs (percentiles from the merged histograms).")

    @Argument(help: "Files written by `salvo bench --json`.")
    var files: [String]

    @Flag(name: .customLong("latency"), help: "Print the latency distribution.")
    var latency = false

    @Flag(name: .customLong("json"), help: "Print the merged report as JSON.")
    var json = false

    func run() throws {
        guard !self.files.isEmpty else { throw ValidationError("name at least one report") }
        struct Input: Decodable { var report: LoadReport }
        var merged: LoadReport?
        for file in self.files {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read \(file)")
            }
            let report: LoadReport
            do {
                report = try JSONDecoder().decode(Input.self, from: data).report
            } catch {
                throw ValidationError("\(file) is not a salvo bench --json report: \(error)")
            }
            if merged == nil { merged = report } else { merged!.merge(report) }
        }
        guard let merged else { return }
        print(self.json ? try merged.jsonText() : "Merged \(self.files.count) runs of \(merged.url)\n" + merged.text(latencyDistribution: self.latency))
    }
}
