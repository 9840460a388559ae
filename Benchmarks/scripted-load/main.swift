// The scripted workload of Benchmarks/wrk-scripted.lua as a Workload: a path built for every
// call from the user's counter, and each response checked (its status and its Content-Type).
// compare.py runs it as the client `salvo-scripted`, with salvo bench's options:
//
//     scripted-load http://127.0.0.1:PORT/small -t1 -c64 -d5s --json
import SalvoLoad

struct Counter {
    var calls = 0
}

let workload = Workload<Void, Counter>(user: { _ in Counter() }, scenarios: [
    Scenario("item", checks: [.status(200), .field(.contentType, equals: "text/plain")]) { counter, request in
        counter.calls += 1
        request.path += "?item=\(counter.calls)"
    },
])
await workload.main()
