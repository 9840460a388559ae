import Synchronization

/// A streamed body that goes on to its reader and into a cache entry as it is read: each
/// chunk is written to the entry's writer, which commits at the body's clean end. A reader
/// that stops early, a body that fails, or a writer that refuses (past the store's limit)
/// leaves nothing stored; the reader sees no difference either way.
struct CachingBody: AsyncSequence, Sendable {
    typealias Element = [UInt8]

    let upstream: ResponseBody
    let sink: Sink

    /// The entry's writer, and whether it is still taking chunks.
    final class Sink: Sendable {
        private let writer: any CacheEntryWriter
        private let replacing: [String]
        private let open = Mutex(true)
        /// Asked at the end: false when what was written may no longer be kept (the URL
        /// was invalidated while the body came in).
        private let mayCommit: @Sendable () -> Bool

        init(writer: any CacheEntryWriter, replacing: [String], mayCommit: @escaping @Sendable () -> Bool = { true }) {
            self.writer = writer
            self.replacing = replacing
            self.mayCommit = mayCommit
        }

        private func take() -> Bool {
            self.open.withLock { open in defer { open = false }; return open }
        }

        func write(_ chunk: [UInt8]) async {
            guard self.open.withLock({ $0 }) else { return }
            do {
                try await self.writer.write(chunk)
            } catch {
                if self.take() { await self.writer.abort() }
            }
        }

        func finish() async {
            guard self.take() else { return }
            guard self.mayCommit() else {
                await self.writer.abort()
                return
            }
            do {
                try await self.writer.commit(replacing: self.replacing)
            } catch {
                await self.writer.abort()
            }
        }

        func abort() async {
            if self.take() { await self.writer.abort() }
        }

        deinit {
            // Dropped before the end (the reader stopped): nothing may become visible.
            if self.open.withLock({ $0 }) {
                let writer = self.writer
                Task { await writer.abort() }
            }
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var upstream: ResponseBody.AsyncIterator
        let sink: Sink

        mutating func next() async throws -> [UInt8]? {
            do {
                guard let chunk = try await self.upstream.next() else {
                    await self.sink.finish()
                    return nil
                }
                await self.sink.write(chunk)
                return chunk
            } catch {
                await self.sink.abort()
                throw error
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(upstream: self.upstream.makeAsyncIterator(), sink: self.sink)
    }
}
