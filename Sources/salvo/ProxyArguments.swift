import HTTPTypes
import SalvoCore

/// `-x`, `-U`, `--noproxy`, `-p` and the proxy environment, read as curl reads them.
extension Get {
    static let proxyConnection = HTTPField.Name("Proxy-Connection")!

    /// The proxies for this run: `-x` (an empty one: none), else the environment
    /// (`http_proxy`, `HTTPS_PROXY`, `ALL_PROXY`…). The hosts that go direct: `--noproxy`, else
    /// `no_proxy`/`NO_PROXY` (for a `-x` proxy too, as curl). `-U` gives the credentials, `-p`
    /// tunnels http:// too.
    func proxyConfiguration() throws(UsageError) -> ProxyConfiguration {
        var proxies: ProxyConfiguration
        do throws(TransportError) {
            if let spelling = self.proxy {
                // The bytes as typed: a password need not be UTF-8.
                let typed = OptionOrder.commandLine.values("x").last ?? Array(spelling.utf8)
                proxies = spelling.isEmpty ? .none : .all(try HTTPProxy(RawArguments.proxySpelling(typed)))
                proxies.bypass = ProxyBypass.environment()
            } else {
                proxies = try .environment()
            }
        } catch {
            // curl: an unsupported kind of proxy cannot be connected to (7); a spelling it
            // cannot read names no proxy it could resolve (5).
            throw UsageError(code: error.code == .unsupportedScheme ? 7 : 5, message: error.description)
        }
        if let noProxy = self.noProxy { proxies.bypass = ProxyBypass(noProxy) }
        var credentials: HTTPProxy.Credentials? = nil
        if let user = self.proxyUser {
            // The bytes as typed, as curl sends them.
            let typed = OptionOrder.commandLine.values("U").last ?? Array(user.utf8)
            let colon = typed.firstIndex(of: UInt8(ascii: ":"))
            credentials = HTTPProxy.Credentials(usernameBytes: Array(typed[..<(colon ?? typed.endIndex)]),
                                                passwordBytes: colon.map { Array(typed[($0 + 1)...]) } ?? [])
        }
        func adjusted(_ proxy: HTTPProxy?) -> HTTPProxy? {
            guard var proxy else { return nil }
            if let credentials { proxy.credentials = credentials }
            proxy.tunnelsPlainHTTP = self.proxyTunnel
            // What curl sends with CONNECT besides Host and the credentials.
            if self.headers.allSatisfy({ !$0.lowercased().hasPrefix("user-agent:") }) {
                proxy.connectHeaderFields[.userAgent] = SalvoVersion.userAgent
            }
            proxy.connectHeaderFields[Self.proxyConnection] = "Keep-Alive"
            return proxy
        }
        proxies.http = adjusted(proxies.http)
        proxies.https = adjusted(proxies.https)
        return proxies
    }

    /// curl's exit status for `error`. A proxy variable that cannot be used fails only the
    /// requests it applies to (a redirect's included), with the status `-x` would give it:
    /// 7 for a kind of proxy Salvo does not speak, 5 for a spelling that names none.
    static func exitCode(for error: TransportError, proxies: ProxyConfiguration) -> Int32 {
        let refused = [proxies.httpRefusal, proxies.httpsRefusal].contains { $0?.code == error.code && $0?.detail == error.detail }
        guard refused else { return CurlExitCode.forError(error) }
        return error.code == .unsupportedScheme ? 7 : 5
    }
}
