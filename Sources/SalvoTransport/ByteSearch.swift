extension UnsafeRawBufferPointer {
    /// Whether these bytes hold `needle` anywhere (an empty needle: always).
    package func containsBytes(_ needle: UnsafeRawBufferPointer) -> Bool {
        guard let first = needle.first else { return true }
        guard self.count >= needle.count else { return false }
        var at = 0
        let last = self.count - needle.count
        while at <= last {
            if self[at] == first {
                var index = 1
                while index < needle.count, self[at + index] == needle[index] { index += 1 }
                if index == needle.count { return true }
            }
            at += 1
        }
        return false
    }
}
