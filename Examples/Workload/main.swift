// A scripted load test, as a k6 or wrk user writes one, against the demo API
// (scripts/demo-api.py): log in once, then readers look up users, some of them missing,
// and now and then open a page behind the token. `make demo` runs it for a few seconds:
//
//     workload-demo http://127.0.0.1:PORT -c 4 -t 1 -d 3s --strict
//
// Templates/Workload is the same as a package of its own, to copy and edit.
import Foundation
import HTTPTypes
import SalvoCore
import SalvoLoad

/// What each virtual user keeps between its calls.
struct Reader {
    let authorization: String
    let token: String
    var next: Int
}

let workload = Workload<String, Reader>(
    setup: { context in
        // Once, before the load: log in and hand the token to every reader.
        let login = try HTTPRequest(method: .post, url: context.url("/login"), headerFields: [.contentType: "application/json"])
        let response = try await context.client.execute(login, body: .bytes(Array(#"{"username":"load","password":"secret"}"#.utf8)))
        guard response.status == .ok else {
            throw DemoFailure(message: "login answered \(response.status.code): \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONDecoder().decode(Login.self, from: Data(response.body)).token
    },
    user: { index, token in Reader(authorization: "Bearer \(token)", token: token, next: index) },
    scenarios: [
        Scenario("user", weight: 6, checks: [
            .status(200),
            .field(.contentType, contains: "json"),
            .body(contains: "email_address"),
        ]) { reader, request in
            reader.next = reader.next % 3 + 1
            request.path = "/users/\(reader.next)"
        },
        Scenario("missing user", weight: 1, checks: [.status(404)]) { _, request in
            request.path = "/users/404"
        },
        Scenario("protected", weight: 1, checks: [.status(200)], thinkTime: .between(.milliseconds(1)...(.milliseconds(5)))) { reader, request in
            request.path = "/protected?token=\(reader.token)"
            request.headerFields[.authorization] = reader.authorization
        },
    ])

struct Login: Decodable {
    let token: String
}

struct DemoFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { self.message }
}

await workload.main(url: "http://127.0.0.1:8080")
