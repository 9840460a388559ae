import Dispatch
import SalvoCore
#if canImport(Glibc)
import Glibc
#endif

/// Standard input as a request body (`-T -`): streamed as it is read, chunked, never whole in
/// memory. Reads block, so they happen on a Dispatch thread, never on Swift's cooperative pool.
enum StandardInput {
    static var body: HTTPBody {
        .producer { writer in
            while let chunk = try await self.read(0) {
                try await writer.write(chunk)
            }
        }
    }

    struct ReadFailed: Error, CustomStringConvertible {
        let errno: Int32
        var description: String { "cannot read the body's input: \(String(cString: strerror(self.errno)))" }
    }

    /// The next piece read from `fd` (0: standard input), nil at its end.
    static func read(_ fd: Int32) async throws -> [UInt8]? {
        defer { threadSanitizerSawResume() }
        let result: Result<[UInt8]?, ReadFailed> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count < 0 {
                        continuation.resume(returning: .failure(ReadFailed(errno: errno)))
                    } else if count == 0 {
                        continuation.resume(returning: .success(nil))
                    } else {
                        buffer.removeLast(buffer.count - count)
                        continuation.resume(returning: .success(buffer))
                    }
                    return
                }
            }
        }
        return try result.get()
    }
}
