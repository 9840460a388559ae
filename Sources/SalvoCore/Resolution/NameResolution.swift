import Dispatch
import SalvoTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How a client turns host names into addresses.
///
/// In order: a fixed override (curl's `--resolve`; the latest for a name wins, a name's own
/// before `*`); a numeric host is its own address; `localhost` and names under `.localhost` are the loopback addresses, never sent to
/// DNS (RFC 6761 §6.3); then the cache; then your resolver, or the system's (getaddrinfo,
/// off the event loop). Answers are cached for ``cacheLifetime``.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.nameResolution.overrides = [try ResolveOverride("api.example.com:443:10.0.0.7")]
/// configuration.nameResolution.resolver = { host, port in try await serviceDiscovery.addresses(of: host) }
/// ```
public struct NameResolution: Sendable {
    /// Addresses fixed for a host and port (or any port), before anything else is asked.
    public var overrides: [ResolveOverride] = []
    /// Your own lookup: numeric addresses (IPv4 or IPv6 text) for a host and port. A thrown
    /// error fails the request with `.dnsFailure`.
    public var resolver: (@Sendable (_ host: String, _ port: Int) async throws -> [String])?
    /// How long an answer is reused; zero asks every time a connection is made.
    public var cacheLifetime: Duration = .seconds(30)
    /// Which address families to connect to (curl's `-4` / `-6`).
    public var family: AddressFamily = .any

    public enum AddressFamily: Sendable, Hashable {
        case any, ipv4, ipv6
    }

    public init(overrides: [ResolveOverride] = [], cacheLifetime: Duration = .seconds(30), family: AddressFamily = .any,
                resolver: (@Sendable (_ host: String, _ port: Int) async throws -> [String])? = nil) {
        self.overrides = overrides
        self.cacheLifetime = cacheLifetime
        self.family = family
        self.resolver = resolver
    }
}

/// A fixed answer for a host (curl's `--resolve host:port:address[,address…]`).
public struct ResolveOverride: Sendable, Hashable {
    /// The host name, compared without regard to case; `*` for every host (as curl).
    public var host: String
    /// The port it applies to; nil for every port.
    public var port: Int?
    /// Numeric IPv4 or IPv6 addresses, tried in this order.
    public var addresses: [String]

    public init(host: String, port: Int?, addresses: [String]) {
        self.host = host
        self.port = port
        self.addresses = addresses
    }

    /// curl's spelling: `host:port:address[,address…]`; an IPv6 address may be bracketed;
    /// `*` as the host matches every host.
    ///
    /// - Throws: `.invalidConfiguration` saying what is wrong.
    public init(_ spelling: String) throws(TransportError) {
        // "+host:…" is curl's spelling for an entry that may expire; here none do.
        let body = spelling.hasPrefix("+") ? spelling.dropFirst() : spelling[...]
        let parts = body.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[2].isEmpty else {
            throw TransportError(.invalidConfiguration, detail: "resolve entry \"\(spelling)\": expected host:port:address")
        }
        let port: Int
        if let number = Int(parts[1]), (1...65535).contains(number) {
            port = number
        } else {
            throw TransportError(.invalidConfiguration, detail: "resolve entry \"\(spelling)\": bad port \"\(parts[1])\"")
        }
        var addresses: [String] = []
        for item in parts[2].split(separator: ",") {
            var address = String(item.trimmingOWS)
            if address.hasPrefix("["), address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
            guard SocketAddress(numericHost: address, port: 1) != nil else {
                throw TransportError(.invalidConfiguration, detail: "resolve entry \"\(spelling)\": \"\(address)\" is not a numeric address")
            }
            addresses.append(address)
        }
        guard !addresses.isEmpty else {
            throw TransportError(.invalidConfiguration, detail: "resolve entry \"\(spelling)\": no address")
        }
        self.init(host: String(parts[0]), port: port, addresses: addresses)
    }
}

/// A client's name resolution at work: the rules of ``NameResolution`` and its cache, shared
/// by the client's loops (the cache is behind a lock, touched once per new connection).
final class HostResolver: Sendable {
    let rules: NameResolution
    private let cache = Mutex<[String: (addresses: [SocketAddress], expires: ContinuousClock.Instant)]>([:])

    static let maxCachedNames = 1024

    /// How many answers are cached now (for tests).
    var cachedNames: Int { self.cache.withLock { $0.count } }

    init(_ rules: NameResolution) {
        self.rules = rules
    }

    /// The addresses of `host`, told to `completion` on `loop`: at once when no lookup is
    /// needed, else once the lookup (off the loop) is done.
    func resolve(host: String, port: Int, on loop: EventLoop,
                 _ completion: @escaping @Sendable (Result<[SocketAddress], TransportError>) -> Void) {
        if let known = self.known(host: host, port: port) {
            completion(known)
            return
        }
        let key = "\(host.lowercased()):\(port)"
        let waiter = Waiter(loop: loop, completion: completion)
        // Lookups of one name run once: connections opened together wait for the same answer.
        let generation = self.lookups.withLock { lookups -> UInt64? in
            let now = ContinuousClock.now
            if var running = lookups.byName[key], now - running.started < Self.staleLookup {
                running.waiters.append(waiter)
                lookups.byName[key] = running
                return nil
            }
            // None, or one so old it may never answer (a hung resolver): a fresh lookup takes
            // its waiters over, and the old one is cancelled if it can be.
            lookups.nextGeneration &+= 1
            let previous = lookups.byName[key]
            previous?.task?.cancel()
            lookups.byName[key] = Lookup(generation: lookups.nextGeneration, started: now,
                                         waiters: (previous?.waiters ?? []) + [waiter], task: nil)
            return lookups.nextGeneration
        }
        guard let generation else { return }
        let remember = { @Sendable (result: Result<[SocketAddress], TransportError>) in
            if case .success(let addresses) = result, self.rules.cacheLifetime > .zero {
                let now = ContinuousClock.now
                self.cache.withLock { cache in
                    // Bounded: a client that meets many hosts keeps the live answers only.
                    if cache.count >= Self.maxCachedNames {
                        cache = cache.filter { $0.value.expires > now }
                        if cache.count >= Self.maxCachedNames { cache.removeAll(keepingCapacity: true) }
                    }
                    cache[key] = (addresses, now + self.rules.cacheLifetime)
                }
            }
            let waiters = self.lookups.withLock { lookups -> [Waiter] in
                guard let running = lookups.byName[key], running.generation == generation else { return [] }
                lookups.byName[key] = nil
                return running.waiters
            }
            let filtered = result.flatMap { self.filtered($0, host: host) }
            for waiter in waiters {
                let completion = waiter.completion
                waiter.loop.execute { completion(filtered) }
            }
        }
        if let resolver = self.rules.resolver {
            let task = Task {
                do {
                    let texts = try await resolver(host, port)
                    let addresses = texts.compactMap { SocketAddress(numericHost: $0, port: port) }
                    remember(addresses.isEmpty
                        ? .failure(TransportError(.dnsFailure, host: host, phase: .resolve, detail: "the resolver gave no numeric address"))
                        : .success(addresses))
                } catch {
                    remember(.failure(TransportError(.dnsFailure, host: host, phase: .resolve, detail: "the resolver failed: \(error)")))
                }
            }
            self.lookups.withLock { lookups in
                if lookups.byName[key]?.generation == generation { lookups.byName[key]?.task = task }
            }
            return
        }
        DispatchQueue.global().async {
            remember(Resolver.lookup(host: host, port: port))
        }
    }

    /// Someone waiting for a lookup: told on its own loop.
    private struct Waiter {
        let loop: EventLoop
        let completion: @Sendable (Result<[SocketAddress], TransportError>) -> Void
    }

    /// A lookup under way for one name and port.
    private struct Lookup {
        let generation: UInt64
        let started: ContinuousClock.Instant
        var waiters: [Waiter]
        /// The custom resolver's task, cancelled if the lookup is given up as stale.
        var task: Task<Void, Never>?
    }

    private struct Lookups {
        var byName: [String: Lookup] = [:]
        var nextGeneration: UInt64 = 0
    }

    private let lookups = Mutex(Lookups())

    /// A lookup older than this is not joined: a fresh one starts (getaddrinfo's own
    /// timeouts are shorter; a custom resolver may hang).
    static let staleLookup: Duration = .seconds(30)

    /// Lookups under way now (for tests).
    var lookupsInFlight: Int { self.lookups.withLock { $0.byName.count } }

    /// How many wait for the lookup of `host` and `port` (for tests).
    func lookupWaiters(host: String, port: Int) -> Int {
        self.lookups.withLock { $0.byName["\(host.lowercased()):\(port)"]?.waiters.count ?? 0 }
    }

    /// An answer that needs no lookup: numeric, overridden, localhost, or cached.
    private func known(host: String, port: Int) -> Result<[SocketAddress], TransportError>? {
        let name = host.lowercased()
        // As curl: the latest entry for the name wins, and a name's own entry before "*";
        // overrides apply to numeric hosts too.
        let matching = { (entry: ResolveOverride, wildcard: Bool) in
            (wildcard ? entry.host == "*" : entry.host.lowercased() == name) && (entry.port == nil || entry.port == port)
        }
        if let override = self.rules.overrides.last(where: { matching($0, false) }) ?? self.rules.overrides.last(where: { matching($0, true) }) {
            return self.filtered(override.addresses.compactMap { SocketAddress(numericHost: $0, port: port) }, host: host)
        }
        if let address = SocketAddress(numericHost: host, port: port) { return self.filtered([address], host: host) }
        if name == "localhost" || name.hasSuffix(".localhost") {
            return self.filtered(["127.0.0.1", "::1"].compactMap { SocketAddress(numericHost: $0, port: port) }, host: host)
        }
        let key = "\(name):\(port)"
        let now = ContinuousClock.now
        let cached = self.cache.withLock { cache -> [SocketAddress]? in
            guard let entry = cache[key] else { return nil }
            if entry.expires <= now {
                cache[key] = nil
                return nil
            }
            return entry.addresses
        }
        return cached.map { self.filtered($0, host: host) }
    }

    /// Only the family asked for (`-4`, `-6`); none left is a failure that says why.
    private func filtered(_ addresses: [SocketAddress], host: String) -> Result<[SocketAddress], TransportError> {
        if self.rules.family == .any { return .success(addresses) }
        let kept: [SocketAddress]
        switch self.rules.family {
        case .any: kept = addresses
        case .ipv4: kept = addresses.filter { $0.family == AF_INET }
        case .ipv6: kept = addresses.filter { $0.family == AF_INET6 }
        }
        guard !kept.isEmpty else {
            // A numeric host of the other family cannot be connected to (curl: 7); a name
            // without an address of the family did not resolve (curl: 6).
            let numeric = SocketAddress(numericHost: host, port: 1) != nil
            return .failure(TransportError(numeric ? .connectFailed : .dnsFailure, host: host, phase: numeric ? .connect : .resolve,
                                            detail: "no address of the family asked for"))
        }
        return .success(kept)
    }
}

