import Testing
@testable import SalvoCore

@Suite struct ConnectionDeadlinesTests {
    func at(_ milliseconds: UInt64) -> Deadline { Deadline(nanoseconds: milliseconds * 1_000_000) }

    @Test func nextIsTheEarliest() {
        #expect(ConnectionDeadlines.none.next == nil)
        #expect(ConnectionDeadlines(total: .distantFuture).next == nil, "distantFuture is no deadline")
        let deadlines = ConnectionDeadlines(total: self.at(500), expectContinue: self.at(300), read: self.at(200))
        #expect(deadlines.next == self.at(200))
        #expect(ConnectionDeadlines(connect: self.at(10), idle: self.at(5)).next == self.at(5))
    }

    @Test func expiredPrefersTheMostImportant() {
        let deadlines = ConnectionDeadlines(total: self.at(500), expectContinue: self.at(300), read: self.at(200))
        #expect(deadlines.expired(at: self.at(199)) == nil)
        #expect(deadlines.expired(at: self.at(200)) == .read)
        #expect(deadlines.expired(at: self.at(300)) == .expectContinue, "the body goes before the silence counts")
        #expect(deadlines.expired(at: self.at(500)) == .total, "the request's own deadline wins")
        #expect(ConnectionDeadlines(connect: self.at(1)).expired(at: self.at(1)) == .connect)
        #expect(ConnectionDeadlines(idle: self.at(1)).expired(at: self.at(2)) == .idle)
    }
}
