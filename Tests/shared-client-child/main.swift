// A process for SharedClientTests: it starts requests through the engine's shared client and
// through a typed client with no transport of its own (the same engine), then leaves while
// they are in flight — by returning from main, or by exit(0) from another thread.
//
//   shared-client-child return|exit <base URL> <path>
//       prints "STARTED" once the requests are on their way, then ends as asked.
import Foundation
import Salvo
import SalvoCore

let arguments = CommandLine.arguments
guard arguments.count == 4, ["return", "exit"].contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: shared-client-child return|exit <base URL> <path>\n".utf8))
    exit(2)
}
let (base, path) = (arguments[2], arguments[3])
let request = try HTTPRequest(method: .get, url: base + path)
for _ in 0..<4 {
    Task.detached { _ = try? await HTTPClient.shared.execute(request) }
}
let typed = try Client(baseURL: base)
Task.detached { _ = try? await typed.value(Endpoint<Empty>.get(path)) }
// Time for the requests to reach the server.
try await Task.sleep(for: .milliseconds(300))
FileHandle.standardOutput.write(Data("STARTED\n".utf8))
if arguments[1] == "exit" {
    Thread.detachNewThread { exit(0) }
    try await Task.sleep(for: .seconds(30))
}
