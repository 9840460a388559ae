import Foundation
import SalvoCore
import SalvoTestSupport
import Testing

/// One version for the package: the code, the changelog's latest release and the default
/// User-Agent say the same.
@Suite struct VersionTests {
    @Test func theChangelogsLatestReleaseIsTheCodesVersion() throws {
        let changelog = try String(contentsOf: TestFixtures.repository.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let released = changelog.split(separator: "\n").first { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        #expect(released?.hasPrefix("## [\(SalvoVersion.string)]") == true, "CHANGELOG's latest release: \(released ?? "none")")
        let parts = SalvoVersion.string.split(separator: ".")
        #expect(parts.count == 3 && parts.allSatisfy { Int($0) != nil }, "major.minor.patch")
    }

    @Test func theCMakeProjectHasIt() throws {
        let cmake = try String(contentsOf: TestFixtures.repository.appendingPathComponent("CMakeLists.txt"), encoding: .utf8)
        #expect(cmake.contains("project(Salvo VERSION \(SalvoVersion.string) "), "CMakeLists.txt's project() version")
    }

    @Test func theEnginesDefaultUserAgentCarriesIt() {
        #expect(HTTPClient.Configuration().userAgent == "salvo/\(SalvoVersion.string)")
    }
}
