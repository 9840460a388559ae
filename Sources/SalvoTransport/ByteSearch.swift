#if canImport(Glibc)
import Glibc
#endif

extension UnsafeRawBufferPointer {
    /// Whether these bytes hold `needle` anywhere (an empty needle: always). Candidates are
    /// found with `memchr` on the needle's first byte and confirmed with `memcmp`.
    package func containsBytes(_ needle: UnsafeRawBufferPointer) -> Bool {
        guard let first = needle.first else { return true }
        guard self.count >= needle.count, let base = self.baseAddress, let pin = needle.baseAddress else { return false }
        var index = 0
        let last = self.count - needle.count
        while index <= last {
            guard let found = memchr(base + index, Int32(first), last - index + 1) else { return false }
            let position = base.distance(to: UnsafeRawPointer(found))
            if memcmp(base + position, pin, needle.count) == 0 { return true }
            index = position + 1
        }
        return false
    }
}
