import HTTPTypes
import SalvoCore
import Synchronization

extension Get {
    /// One URL's transfer, start to end: its request, its output, its messages and its -w
    /// line; its exit code (0 when it succeeded).
    func transfer(_ planned: TransferPlan.Transfer, _ session: Session) async -> Int32 {
        var record = WriteOut.Record()
        record.urlIndex = planned.index
        let status = await self.exchange(planned, session, &record)
        if let format = session.format, record.attempted {
            record.exitCode = status
            let requestURL = (try? CommandLineURL.normalize(planned.url)) ?? String(decoding: planned.url, as: UTF8.self)
            // Warned about even with -s, as curl does.
            WriteOut.write(format, record, requestURL: requestURL) { Output.stderr("salvo: \($0)\n") }
        }
        return status
    }

    private func exchange(_ planned: TransferPlan.Transfer, _ session: Session, _ record: inout WriteOut.Record) async -> Int32 {
        /// Says why the transfer failed (and keeps it for -w's %{errormsg}).
        func failed(_ code: Int32, _ message: String) -> Int32 {
            record.errorMessage = message
            return self.report(code, message)
        }
        let request: HTTPRequest
        let body: HTTPBody?
        let expectContinue: Bool
        let removesHost: Bool
        do {
            (request, body, expectContinue, removesHost) = try self.buildRequest(url: planned.url, upload: planned.upload, session: session)
        } catch let error as TransportError {
            return failed(CurlExitCode.forError(error), error.description)
        } catch let error as UsageError {
            return failed(error.code, error.message)
        } catch {
            return failed(2, "\(error)")
        }
        let client = session.client
        let target = request.path ?? "/"


        // Opened at the first byte to write, as curl does: a failed request leaves an
        // existing file as it was.
        var sink: Output.Sink
        do throws(UsageError) {
            sink = try self.bodySink(planned.destination, target: target)
        } catch {
            return failed(error.code, error.message)
        }
        defer { sink.close() }
        record.attempted = true
        record.effectiveURL = "\(request.scheme ?? "http")://\(request.authority ?? "")\(target)"
        record.method = request.method.rawValue
        record.fileName = sink.name ?? ""

        // Every head as it arrived (interim ones, each of a redirect chain, the lines of one
        // that failed), shown byte for byte with -i and -v, as curl does — but for control
        // characters in a status line, shown escaped on stdout and stderr (a file given
        // with -o gets the bytes as they came).
        let heads = Mutex<[ReceivedHead]>([])
        var options = HTTPClient.RequestOptions(timeout: session.timeout)
        options.expectContinue = expectContinue
        // -H "Host:" (on the command line or in a -H @file) removes the Host line itself, as curl does.
        options.omitsHost = removesHost
        if self.include || self.headOnly || self.verbose || session.dump != nil || session.format != nil {
            options.headObserver = { head in heads.withLock { $0.append(head) } }
        }
        if self.verbose {
            // Shown as the connection takes the request, in the version it speaks, as curl
            // does; a request a proxy gets whole shows its absolute form, as it goes on the wire.
            let viaProxy = request.headerFields[Self.proxyConnection] != nil
            let described = Mutex(false)
            let length = body?.announcedLength
            options.connectionObserver = { report in
                // The first connection only: a request sent again shows once.
                let first = described.withLock { shown in
                    defer { shown = true }
                    return !shown
                }
                guard first else { return }
                if report.version == .http2 { Output.stderr("* using HTTP/2\r\n") }
                Output.stderr(Self.describe(request, body: length, absoluteForm: viaProxy, version: report.version))
            }
        }
        /// The last response head (a redirect's, or the final one).
        var lastHead: ReceivedHead?
        /// Writes `raw` (a head, or trailer lines) where heads go, whole; the failure's
        /// message when the output failed.
        func showHead(_ raw: [UInt8]) -> String? {
            let shown = ShownHead.escapingStatusLine(raw)
            if self.verbose { Output.stderr(Self.prefixedLines(shown, prefix: "< ")) }
            let included = self.include || self.headOnly
            let output = sink.isFile ? raw : shown
            if included, session.dump != nil, self.dumpHeader == "-", !sink.isFile {
                // Both to stdout: each line twice, one after the other, as curl writes them —
                // in one write, so that the heads of parallel transfers never mix.
                var both: [UInt8] = []
                for (line, shownLine) in zip(Self.lines(raw), Self.lines(output)) {
                    both += line
                    both += shownLine
                }
                return sink.write(both) ? nil : sink.failure
            }
            if let dump = session.dump, let failure = dump.write(raw) { return failure }
            if included, !sink.write(output) { return sink.failure }
            return nil
        }
        /// Writes the heads that came since the last call; the failure's message when the
        /// output failed.
        func showHeads() -> String? {
            let arrived = heads.withLock { list in
                defer { list.removeAll() }
                return list
            }
            for head in arrived {
                if head.kind != .failed { record.headerBytes += head.raw.count }
                if head.kind == .response { lastHead = head }
                if let failure = showHead(head.raw) { return failure }
            }
            return nil
        }
        defer {
            // A 3xx not followed: where it pointed (curl's %{redirect_url}).
            if let last = lastHead?.head, (300..<400).contains(last.status.code), let location = last.headerFields[.location] {
                record.redirectURL = Self.withRootPath(URLReference.resolve(location, against: record.effectiveURL))
            }
        }

        do throws(TransportError) {
            var response: TransportResponse
            do throws(TransportError) {
                response = try await client.stream(request, body: body, options: options)
                if response.status.code == 417, options.expectContinue, body?.isReplayable ?? true {
                    // The server refuses to be asked first: sent again without Expect, as curl does.
                    response.body.cancel()
                    options.expectContinue = false
                    response = try await client.stream(request, body: body, options: options)
                }
            } catch {
                if let failure = showHeads() { return failed(23, failure) }
                if let last = lastHead, let head = last.head {
                    // What the last response said, for -w (a redirect past --max-redirs).
                    record.statusCode = Int(head.status.code)
                    record.headerFields = head.headerFields
                    record.version = Self.version(of: last.raw)
                }
                throw error
            }
            if let failure = showHeads() {
                response.body.cancel()
                return failed(23, failure)
            }
            record.statusCode = Int(response.status.code)
            record.headerFields = response.headerFields
            record.metrics = response.metrics
            record.version = response.version
            if let method = response.effectiveRequest?.method { record.method = method.rawValue }
            record.redirects = response.redirects.count
            if let last = response.redirectChain.last { record.effectiveURL = last }
            if let reason = response.unfollowedRedirect {
                // A 307/308 for a body that cannot be sent again (-T -): curl stops here too.
                response.body.cancel()
                return failed(25, reason)
            }
            if self.fail && response.status.code >= 400 {
                response.body.cancel()
                return failed(22, "The requested URL returned error: \(response.status.code)")
            }
            if let limit = self.maxFilesize, let announced = response.headerFields[.contentLength],
               Int(announced).map({ $0 > limit }) ?? announced.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                // A length past any count (the engine read the body to the close) exceeds too.
                response.body.cancel()
                return failed(63, "Maximum file size exceeded")
            }
            do throws(UsageError) {
                if let named = try self.remoteHeaderSink(planned.destination, response.headerFields, target: target) {
                    sink = named
                    record.fileName = sink.name ?? ""
                    guard sink.write([]) else {
                        response.body.cancel()
                        return failed(23, sink.failure)
                    }
                }
            } catch {
                response.body.cancel()
                return failed(error.code, error.message)
            }
            var received = 0
            for try await chunk in response.body {
                received += chunk.count
                if let limit = self.maxFilesize, received > limit {
                    response.body.cancel()
                    return failed(63, "Maximum file size exceeded")
                }
                record.bodyBytes = received
                guard sink.write(chunk) else {
                    response.body.cancel()
                    return failed(23, sink.failure)
                }
            }
            if let metrics = response.body.metrics { record.metrics = metrics }
            if let trailers = response.body.trailers, !trailers.isEmpty {
                // Shown and dumped after the body, as curl writes them.
                let lines = trailers.map { "\($0.name.rawName): \($0.value)\r\n" }.joined()
                if let failure = showHead(Array(lines.utf8)) { return failed(23, failure) }
            }
            // An empty body still makes (or empties) the file, as curl does.
            guard sink.write([]) else { return failed(23, sink.failure) }
            return 0
        } catch {
            return failed(Self.exitCode(for: error, proxies: session.proxies), error.description)
        }
    }

    /// `url` with the path `/` when it has none (`https://host` is `https://host/`), as curl
    /// writes a URL.
    static func withRootPath(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        guard let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) else { return url + "/" }
        return rest[end] == "/" ? url : String(url[..<end]) + "/" + String(url[end...])
    }

    /// The version in a head's status line (`HTTP/1.1 200 OK`).
    static func version(of raw: [UInt8]) -> HTTPVersion? {
        guard raw.count > 7, raw.starts(with: "HTTP/".utf8), let major = Int(String(UnicodeScalar(raw[5]))) else { return nil }
        let minor = raw[6] == UInt8(ascii: ".") ? Int(String(UnicodeScalar(raw[7]))) ?? 0 : 0
        return HTTPVersion(major: major, minor: minor)
    }

    /// `raw`'s lines, each with its line end.
    static func lines(_ raw: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var start = raw.startIndex
        for index in raw.indices where raw[index] == 0x0A {
            lines.append(Array(raw[start...index]))
            start = index + 1
        }
        if start < raw.endIndex { lines.append(Array(raw[start...])) }
        return lines
    }
}
