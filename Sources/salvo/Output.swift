#if canImport(Glibc)
import Glibc
#endif

/// Plain file-descriptor output: no Foundation, no buffering surprises.
enum Output {
    static func stderr(_ text: String) {
        var text = text
        text.withUTF8 { _ = writeAll(2, UnsafeRawBufferPointer($0)) }
    }

    @discardableResult
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// Reads a whole file (nil path: stdin).
    static func readFile(_ path: String?) -> [UInt8]? {
        let fd = path.map { open($0, O_RDONLY | O_CLOEXEC) } ?? 0
        guard fd >= 0 else { return nil }
        defer { if path != nil { close(fd) } }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { return result }
            result += buffer[0..<n]
        }
    }

    /// Where a body goes: stdout or a file.
    struct Sink {
        let fd: Int32
        let owned: Bool

        init(path: String?) throws {
            if let path, path != "-" {
                let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw SinkError() }
                self.fd = fd
                self.owned = true
            } else {
                self.fd = 1
                self.owned = false
            }
        }

        func write(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { Output.writeAll(self.fd, $0) }
        }

        func close() {
            if self.owned { Glibc.close(self.fd) }
        }
    }

    struct SinkError: Error {}
}
