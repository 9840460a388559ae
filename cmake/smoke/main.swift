// salvo-smoke: proves that SalvoCore built by CMake links and starts. No network traffic:
// it parses a URL, then starts a client (event loop threads, pools) and shuts it down.
import SalvoCore

let url = try RequestURL("http://127.0.0.1:8080/smoke?x=1")
precondition(url.port == 8080 && url.target == "/smoke?x=1", "unexpected parse: \(url)")

let client = try HTTPClient()
client.shutdown()

print("salvo-smoke: ok (\(url))")
