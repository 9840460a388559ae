import Testing
@testable import SalvoCore

@Suite struct HTTP1ConnectionStateMachineTests {
    @Test func requestResponseKeepAlive() {
        var machine = HTTP1ConnectionStateMachine()
        let r1 = machine.startRequest()
        #expect(r1 == .write)
        let r2 = machine.writeFinished()
        #expect(r2 == .none)
        let r3 = machine.headReceived()
        #expect(r3 == .forwardHead)
        let r4 = machine.responseEnded(keepAlive: true)
        #expect(r4 == .succeedRequest(reuse: true))
        #expect(machine.isIdle)
        #expect(machine.requestsServed == 1)
    }

    @Test func responseWithoutKeepAliveCloses() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.startRequest()
        _ = machine.writeFinished()
        _ = machine.headReceived()
        let r5 = machine.responseEnded(keepAlive: false)
        #expect(r5 == .succeedRequest(reuse: false))
        #expect(machine.isClosed)
    }

    @Test func earlyResponseBeforeTheBodyIsWrittenClosesTheConnection() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.startRequest()
        let r6 = machine.headReceived()
        #expect(r6 == .forwardHead)
        let r7 = machine.responseEnded(keepAlive: true)
        #expect(r7 == .succeedRequest(reuse: false))
        #expect(machine.isClosed)
        let r8 = machine.writeFinished()
        #expect(r8 == .none)
    }

    @Test func idleConnectionClosedByServer() {
        var machine = HTTP1ConnectionStateMachine()
        let r9 = machine.remoteClosed()
        #expect(r9 == .close)
        #expect(machine.isClosed)
        let r10 = machine.remoteClosed()
        #expect(r10 == .none)
        let r11 = machine.failed()
        #expect(r11 == .none)
    }

    /// The peer's close fails the exchange whether the connection was fresh or reused and
    /// whatever arrived: whether the request goes again is its owner's decision (see
    /// RequestStateMachineTests), made from facts such as how many requests the connection served.
    @Test func aPeerCloseDuringAnExchangeFailsItAndTellsWhetherTheConnectionWasReused() {
        var fresh = HTTP1ConnectionStateMachine()
        _ = fresh.startRequest()
        #expect(fresh.remoteClosed() == .failRequest)
        #expect(fresh.requestsServed == 0 && fresh.isClosed)

        var reused = HTTP1ConnectionStateMachine()
        _ = reused.startRequest(); _ = reused.writeFinished(); _ = reused.headReceived()
        _ = reused.responseEnded(keepAlive: true)
        _ = reused.startRequest(); _ = reused.writeFinished(); _ = reused.headReceived()
        #expect(reused.remoteClosed() == .failRequest)
        #expect(reused.requestsServed == 1 && reused.isClosed)
    }

    /// A request started on a connection that is not idle fails, instead of trapping.
    @Test func aRequestStartedOnABusyConnectionFails() {
        var machine = HTTP1ConnectionStateMachine()
        #expect(machine.startRequest() == .write)
        #expect(machine.startRequest() == .failRequest)
        #expect(machine.isClosed)
        #expect(machine.startRequest() == .failRequest, "nor on a closed one")
    }

    @Test func failures() {
        var idle = HTTP1ConnectionStateMachine()
        let r15 = idle.failed()
        #expect(r15 == .close)
        var active = HTTP1ConnectionStateMachine()
        _ = active.startRequest()
        let r16 = active.failed()
        #expect(r16 == .failRequest)
        #expect(active.isClosed)
    }

    @Test func eventsOutOfOrderAreIgnored() {
        var machine = HTTP1ConnectionStateMachine()
        let r17 = machine.writeFinished()
        #expect(r17 == .none)
        let r18 = machine.headReceived()
        #expect(r18 == .none)
        let r19 = machine.responseEnded(keepAlive: true)
        #expect(r19 == .none)
        #expect(machine.isIdle)
        _ = machine.startRequest()
        let r20 = machine.responseEnded(keepAlive: true)
        #expect(r20 == .none, "an end before a head is not an end")
        _ = machine.headReceived()
        let r21 = machine.headReceived()
        #expect(r21 == .none, "a second head is ignored")
    }

    /// A streamed body with a length: every byte is out, the response comes, and the request
    /// waits for the producer's end before it succeeds.
    @Test func responseBeforeTheProducerEndsWaitsForIt() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.startRequest()
        #expect(machine.bodySent() == .none)
        #expect(machine.headReceived() == .forwardHead)
        #expect(machine.responseEnded(keepAlive: true) == .none, "complete on the wire, but the producer has not ended")
        #expect(!machine.isAwaitingResponse)
        #expect(!machine.isIdle && !machine.isClosed)
        #expect(machine.writeFinished() == .succeedRequest(reuse: true))
        #expect(machine.isIdle)
        #expect(machine.requestsServed == 1)
    }

    @Test func producerFailingAfterTheResponseFailsTheRequest() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.startRequest()
        _ = machine.bodySent()
        _ = machine.headReceived()
        _ = machine.responseEnded(keepAlive: true)
        #expect(machine.failed() == .failRequest)
        #expect(machine.isClosed)
    }

    @Test func producerEndingBeforeTheResponse() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.startRequest()
        _ = machine.bodySent()
        #expect(machine.isAwaitingResponse)
        #expect(machine.writeFinished() == .none)
        #expect(machine.bodySent() == .none, "a body sent after the write finished is ignored")
        _ = machine.headReceived()
        #expect(machine.responseEnded(keepAlive: false) == .succeedRequest(reuse: false))
        #expect(machine.isClosed)
    }
}
