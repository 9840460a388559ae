// The workload: edit the scenarios, then
//
//     swift run -c release load http://127.0.0.1:8080 -c 64 -d 30s --latency
//
// takes `salvo bench`'s options (-c users, -t threads, -d duration, -n calls, -R rate,
// -H fields, --json, -k, --proxy…) and prints its report with each check's counts.
import SalvoLoad

/// What each virtual user keeps between its calls.
struct Visitor {
    var page = 0
}

let workload = Workload<Void, Visitor>(
    user: { index in Visitor(page: index) },
    scenarios: [
        // Nine calls in ten: a page of the catalogue, a different one each time.
        Scenario("catalogue", weight: 9, checks: [.status(200)]) { visitor, request in
            visitor.page = (visitor.page + 1) % 50
            request.path = "/catalogue?page=\(visitor.page)"
        },
        // One in ten: the front page, and a pause of 10 to 50 ms before the next call.
        Scenario("front page", checks: [.status(200), .field(.contentType, contains: "html")],
                 thinkTime: .between(.milliseconds(10)...(.milliseconds(50)))) { _, request in
            request.path = "/"
        },
    ])

await workload.main()
