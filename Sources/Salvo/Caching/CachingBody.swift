import Synchronization

/// A streamed body that goes on to its reader and into a cache entry as it is read: each
/// chunk is written to the entry's writer, which commits at the body's clean end. A reader
/// that stops early, a body that fails, or a writer that refuses (past the store's limit)
/// leaves nothing stored; the reader sees no difference either way.
final class CachingBody: ResponseBodySource {
    private let upstream: ResponseBody
    private let sink: Sink
    /// The upstream body's one iterator, taken by the first reader.
    private let iterator: Mutex<ResponseBody.AsyncIterator?>

    init(upstream: ResponseBody, sink: Sink) {
        self.upstream = upstream
        self.sink = sink
        self.iterator = Mutex(upstream.makeAsyncIterator())
    }

    /// A body read from the upstream one and stored as it goes.
    static func body(_ upstream: ResponseBody, sink: Sink) -> ResponseBody {
        ResponseBody(source: CachingBody(upstream: upstream, sink: sink))
    }

    func next() async -> Result<[UInt8]?, TransportError> {
        // One reader at a time (claimReader): the iterator is taken out while it reads.
        guard var iterator = self.iterator.withLock({ $0.take() }) else { return .failure(.secondReader) }
        defer { self.iterator.withLock { $0 = iterator } }
        do {
            guard let chunk = try await iterator.next() else {
                await self.sink.finish()
                return .success(nil)
            }
            await self.sink.write(chunk)
            return .success(chunk)
        } catch {
            await self.sink.abort()
            return .failure(error)
        }
    }

    /// The reader is gone or cancelled: the upstream body stops (its connection is let go),
    /// and nothing is stored.
    func cancel() {
        self.upstream.cancel()
        let sink = self.sink
        Task { await sink.abort() }
    }

    private let claimed = Mutex(false)

    func claimReader() -> Bool {
        self.claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }

    var trailers: HTTPFields? { self.upstream.trailers }
    var metrics: TransportMetrics? { self.upstream.metrics }
}

extension CachingBody {
    /// The entry's writer, and whether it is still taking chunks.
    final class Sink: Sendable {
        private let writer: any CacheEntryWriter
        private let replacing: [String]
        private let open = Mutex(true)
        /// Asked at the end: false when what was written may no longer be kept (the URL
        /// was invalidated while the body came in).
        private let mayCommit: @Sendable () -> Bool
        /// Removes what was committed, when `mayCommit` says no right after the commit.
        private let takeBack: @Sendable () async -> Void

        init(writer: any CacheEntryWriter, replacing: [String], mayCommit: @escaping @Sendable () -> Bool = { true },
             takeBack: @escaping @Sendable () async -> Void = {}) {
            self.writer = writer
            self.replacing = replacing
            self.mayCommit = mayCommit
            self.takeBack = takeBack
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
                if !self.mayCommit() { await self.takeBack() }
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

}
