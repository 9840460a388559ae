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

    @Test func durationsInWholeNanosecondsClamped() {
        #expect(Duration.zero.nanosecondsClamped == 0)
        #expect(Duration.seconds(-3).nanosecondsClamped == 0)
        #expect((Duration.zero - .nanoseconds(1)).nanosecondsClamped == 0)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: 999_999_999).nanosecondsClamped == 0, "below a nanosecond")
        #expect(Duration.milliseconds(1500).nanosecondsClamped == 1_500_000_000)
        #expect(Duration(secondsComponent: 30, attosecondsComponent: 1_999_999_999).nanosecondsClamped == 30_000_000_001)
        #expect(Duration.seconds(18_446_744_073).nanosecondsClamped == 18_446_744_073_000_000_000)
        #expect(Duration.seconds(18_446_744_074).nanosecondsClamped == .max, "past UInt64 nanoseconds")
        #expect(Duration.seconds(Int64.max).nanosecondsClamped == .max)
        #expect((Deadline(nanoseconds: 5) + .seconds(Int64.max)) == .distantFuture)
    }
}
