import SalvoTransport
/// A loop-confined value carried through a `@Sendable` closure to be used on its loop.
///
/// @unchecked Sendable: `value` is read only on `loop`'s thread (asserted in debug builds);
/// the wrapper only lets it travel through other threads untouched.
struct LoopBound<Value>: @unchecked Sendable {
    private let _value: Value
    let loop: EventLoop

    init(_ value: Value, loop: EventLoop) {
        self._value = value
        self.loop = loop
    }

    var value: Value {
        self.loop.assertInLoop()
        return self._value
    }

    /// The value without the loop check, to be stored (not used) elsewhere.
    var unsafeValue: Value { self._value }
}

/// A slot for a loop-confined value that is filled on the loop, read on the loop, and passed
/// around elsewhere (a cancellation handler holds it before the request exists).
///
/// @unchecked Sendable: `value` is read and written only on `loop`'s thread.
final class LoopBoundBox<Value>: @unchecked Sendable {
    private var _value: Value?
    let loop: EventLoop

    init(loop: EventLoop) { self.loop = loop }

    var value: Value? {
        get { self.loop.assertInLoop(); return self._value }
        set { self.loop.assertInLoop(); self._value = newValue }
    }
}
