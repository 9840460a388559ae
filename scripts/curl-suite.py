#!/usr/bin/env python3
"""Run the plain-HTTP cases of curl's own test suite against `salvo get`.

A developer tool, not part of `make test`. It reads curl's test case files
(tests/data/testNNN of a curl source tree, written for curl 7.88), keeps the
cases whose command line only uses options `salvo get` understands, and runs
each one the way curl's runtests.pl would: a scripted HTTP server on a free
loopback port answers with the case's <reply> parts, the client runs with
`--output log/curlNNN.out --include` prepended (unless the case says
otherwise), and afterwards the exit code, stdout/stderr, the saved output,
output files and the request bytes the server received are compared with
the case's <verify> section. Only loopback traffic is involved.

    scripts/curl-suite.py --curl-src ~/src/curl                 # salvo
    scripts/curl-suite.py --curl-src ~/src/curl --client curl   # reference
    scripts/curl-suite.py --curl-src ~/src/curl --only 1,3 -v   # with diffs

The User-Agent line is not held against the client: the expected
`User-Agent: curl/<version>` line is dropped from both sides before the
request comparison, and what the client sent instead is reported as a note.
"""

import argparse
import base64
import collections
import difflib
import getpass
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

CURL_VERSION = "7.88.1"
HOSTIP = "127.0.0.1"

# Features a case may require (<features>, %if). A case runs only when both
# clients have what it needs, so the selection is the same for either client.
CURL_FEATURES = {
    "http", "https", "ftp", "ftps", "file", "dict", "gopher", "gophers",
    "imap", "imaps", "pop3", "pop3s", "smtp", "smtps", "rtsp", "scp", "sftp",
    "smb", "smbs", "telnet", "tftp", "mqtt", "ldap", "ldaps",
    "alt-svc", "brotli", "zstd", "GSS-API", "HSTS", "http/2", "https-proxy",
    "idn", "ipv6", "Kerberos", "large_file", "libz", "NTLM", "NTLM_WB", "PSL",
    "SPNEGO", "SSL", "OpenSSL", "crypto", "threadsafe", "TLS-SRP",
    "unix-sockets", "threaded-resolver", "libssh2", "cookies", "DoH",
    "HTTP-auth", "Mime", "netrc", "parsedate", "proxy", "shuffle-dns",
    "typecheck", "verbose-strings", "wakeup", "headers-api", "xattr",
}
SALVO_FEATURES = {"http", "https", "libz", "large_file", "ipv6", "SSL",
                  "OpenSSL", "threadsafe"}
FEATURES = CURL_FEATURES & SALVO_FEATURES

# curl options `salvo get` supports: long name -> takes a value.
LONG_OPTIONS = {
    "request": True, "header": True, "data": True, "data-binary": True,
    "upload-file": True, "output": True, "include": False, "head": False,
    "silent": False, "show-error": False, "verbose": False, "fail": False,
    "max-time": True, "connect-timeout": True, "insecure": False,
    "compressed": False, "max-filesize": True, "location": False,
    "max-redirs": True,
}
SHORT_WITH_VALUE = set("XHdTom")
SHORT_FLAGS = set("iIsSvfkL")

# Test-file variables: the ones this runner provides, and every other name
# runtests.pl knows (a case using one of those is skipped).
PROVIDED_VARS = ["HOSTIP", "CLIENTIP", "HTTPPORT", "NOLISTENPORT", "TESTNUMBER",
                 "PWD", "POSIX_PWD", "FILE_PWD", "SRCDIR", "VERSION", "USER",
                 "LOGDIR"]
OTHER_VARS = ["CLIENT6IP", "HOST6IP", "CURL", "FTP6PORT", "FTPPORT", "FTPSPORT",
              "FTPTIME2", "FTPTIME3", "GOPHER6PORT", "GOPHERPORT", "GOPHERSPORT",
              "HTTP6PORT", "HTTP2PORT", "HTTP2TLSPORT", "HTTP3PORT", "HTTPSPORT",
              "HTTPSPROXYPORT", "HTTPTLS6PORT", "HTTPTLSPORT", "HTTPUNIXPATH",
              "SOCKSUNIXPATH", "IMAP6PORT", "IMAPPORT", "MQTTPORT", "TELNETPORT",
              "POP36PORT", "POP3PORT", "PROXYPORT", "RTSP6PORT", "RTSPPORT",
              "SMBPORT", "SMBSPORT", "SMTP6PORT", "SMTPPORT", "SOCKSPORT",
              "SSHPORT", "SSHSRVMD5", "SSHSRVSHA256", "SSH_PWD", "TFTP6PORT",
              "TFTPPORT", "DICTPORT", "H2CVER"]
VAR_RE = re.compile("%(" + "|".join(sorted(PROVIDED_VARS + OTHER_VARS,
                                          key=len, reverse=True)) + ")")
KNOWN_SERVERCMDS = ("auth_required", "idle", "stream", "connection-monitor",
                    "swsclose", "no-expect", "writedelay:", "skip:")


# ---------------------------------------------------------------- test files

def split_lines(text):
    """Split on LF only (CRs and other bytes stay), keeping the endings."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


def parse_attrs(tag_line):
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag_line))


def get_part(lines, section, part):
    """Return (attributes, content lines) of <section><part>, like getpart.pm.
    Attributes are None when the part does not exist."""
    attrs, out, depth = None, [], 0
    open_re = re.compile(r"^ *<%s[ >]" % re.escape(part))
    close_re = re.compile(r"^ *</%s[ >]" % re.escape(part))
    for line in lines:
        if depth == 0:
            if re.match(r"^ *<%s" % re.escape(section), line):
                depth = 1
        elif open_re.match(line):
            if depth > 1:
                out.append(line)
            else:
                attrs = parse_attrs(line)
            depth += 1
        elif depth >= 2 and close_re.match(line):
            if depth > 2:
                out.append(line)
            depth -= 1
        elif re.match(r"^ *</%s" % re.escape(section), line):
            break
        elif depth >= 2:
            out.append(line)
    if attrs is not None and "base64" in attrs:
        raw = base64.b64decode("".join(out).encode("latin-1"))
        out = [raw.decode("latin-1")] if raw else []
    elif attrs is not None and "hex" in attrs:
        out = [bytes.fromhex(re.sub("[^0-9A-Fa-f]", "", l)).decode("latin-1")
               for l in out]
    return attrs, out


def part_text(lines, section, part):
    return "".join(get_part(lines, section, part)[1])


def chomp(text):
    return text[:-1] if text.endswith("\n") else text


class Newlines:
    """runtests' CRLF 'guessing' for crlf="yes": header-looking lines (and
    the blank line after them) get CRLF endings."""
    HEADERISH = [re.compile(r"^HTTP/(1.1|1.0|2|3) [1-5][^\r]*\Z"),
                 re.compile(r"^(GET|POST|PUT|DELETE) \S+ HTTP/\d+(\.\d+)?")]

    def __init__(self):
        self.prev = False

    def fix(self, line):
        if (any(r.search(line) for r in self.HEADERISH) or
                (re.search(r"^[a-z0-9_-]+: [^\r]*\Z", line, re.I) and
                 not re.match(r"^curl: \(\d+\) ", line))):
            self.prev = True
            return re.sub(r"\r*\n", "\r\n", line, count=1)
        if line == "\n" and self.prev:
            line = "\r\n"
        self.prev = False
        return line


def subst_specials(line):
    """%b64[...]b64%, %hex[...]hex% and %repeat[N x str]% (first of each)."""
    unpct = lambda s: re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m[1], 16)), s)
    line = re.sub(r"%b64\[(.*)\]b64%", lambda m: base64.b64encode(
        unpct(m[1]).encode("latin-1")).decode(), line, count=1, flags=re.I)
    line = re.sub(r"%hex\[(.*)\]hex%", lambda m: unpct(m[1]), line, count=1, flags=re.I)
    return re.sub(r"%repeat\[(\d+) x (.*)\]%", lambda m: unpct(m[2]) * int(m[1]),
                  line, count=1, flags=re.I)


def preprocess(lines, variables):
    """runtests' prepro: %if/%else/%endif, variables, specials, data CRLF."""
    out, show, data_crlf, nl = [], True, False, Newlines()
    for line in lines:
        m = re.match(r"^ *%if (.*)", line)
        if m:
            cond = m[1].strip()
            show = (cond[1:] not in FEATURES) if cond.startswith("!") else (cond in FEATURES)
            continue
        if re.match(r"^ *%else", line):
            show = not show
            continue
        if re.match(r"^ *%endif", line):
            show = True
            continue
        if not show:
            continue
        m = re.match(r"^ *<data(.*)>", line)
        if m and 'crlf="yes"' in m[1]:
            data_crlf = True
        elif data_crlf and re.match(r"^ *</data", line):
            data_crlf = False
        line = VAR_RE.sub(lambda v: variables.get(v[1], v[0]), line)
        line = subst_specials(line)
        out.append(nl.fix(line) if data_crlf else line)
    return out


def perl_op(op):
    """Translate a one-line Perl op of <strippart>/<stripfile> into a Python
    function on a line. Returns None if the op is beyond this translator."""
    op = op.strip().rstrip(";").strip()
    if not op or op.startswith("#"):
        return lambda s: s
    m = re.fullmatch(r"\$_ = '' if /(.*)/", op)
    if m:
        rx = re.compile(m[1])
        return lambda s: "" if rx.search(s) else s
    if len(op) < 4 or op[0] != "s" or op[1].isalnum() or op[1].isspace():
        return None
    delim, fields, cur, i = op[1], [], "", 2
    while i < len(op):
        c = op[i]
        if c == "\\" and i + 1 < len(op):
            cur += c + op[i + 1] if op[i + 1] != delim else op[i + 1]
            i += 2
            continue
        if c == delim:
            fields.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    fields.append(cur)
    if len(fields) != 3 or not set(fields[2]) <= set("gimsx"):
        return None
    pattern, repl, flags = fields
    repl = re.sub(r"\$\{?(\d)\}?", r"\\g<\1>", repl)
    repl = re.sub(r"\\([^nrt\\g])", r"\1", repl)
    reflags = ((re.I if "i" in flags else 0) | (re.M if "m" in flags else 0) |
               (re.S if "s" in flags else 0) | (re.X if "x" in flags else 0))
    try:
        rx = re.compile(pattern, reflags)
        rx.sub(repl, "")
    except (re.error, IndexError):
        return None
    count = 0 if "g" in flags else 1
    return lambda s: rx.sub(repl, s, count=count)


# ----------------------------------------------------------------- selection

def tokenize_command(cmd):
    """Check a curl command line against salvo's options; return (args, None)
    or (None, skip reason)."""
    try:
        args = shlex.split(cmd)
    except ValueError:
        return None, "command line does not parse"
    if any(a in ("<", ">", "|", ";", "&", "&&") or a.startswith(("<", ">")) for a in args):
        return None, "shell redirection in command"
    urls, i = [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and len(a) > 2:
            if a[2:] not in LONG_OPTIONS:
                return None, "option " + a
            i += 2 if LONG_OPTIONS[a[2:]] else 1
            continue
        if a.startswith("-") and len(a) > 1:
            for j, c in enumerate(a[1:]):
                if c in SHORT_WITH_VALUE:
                    i += 0 if j + 2 < len(a) else 1
                    break
                if c not in SHORT_FLAGS:
                    return None, "option -" + c
            i += 1
            continue
        urls.append(a)
        i += 1
    if len(urls) != 1:
        return None, "%d URLs" % len(urls)
    url = urls[0]
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", url) and not url.lower().startswith("http://"):
        return None, "non-http URL"
    if re.search(r"[\[\]{}]", url):
        return None, "URL globbing"
    return args, None


def setenv_pairs(lines):
    return [tuple(l.strip().split("=", 1)) for l in get_part(lines, "client", "setenv")[1]
            if re.match(r"^\s*[A-Za-z_]\w*=", l)]


def disabled_tests(data_dir):
    path = os.path.join(data_dir, "DISABLED")
    if not os.path.exists(path):
        return set()
    with open(path, encoding="latin-1") as f:
        kept = preprocess(split_lines(f.read()), {})
    return {int(l.split()[0]) for l in kept if re.match(r"^\d+", l)}


def select(num, lines, disabled):
    """Return None if the case can run here, or the reason it cannot."""
    servers = [l.strip() for l in get_part(lines, "client", "server")[1] if l.strip()]
    if servers != ["http"]:
        return "server is not plain http"
    if num in disabled:
        return "listed in DISABLED"
    for part, reason in (("tool", "libtest <tool>"), ("precheck", "<precheck>"),
                         ("postcheck", "<postcheck>")):
        if get_part(lines, "client", part)[1]:
            return reason
    cmd_attrs, _ = get_part(lines, "client", "command")
    if cmd_attrs is None:
        return "no command"
    if cmd_attrs.get("type") in ("perl", "shell"):
        return "perl/shell command"
    for feat in get_part(lines, "client", "features")[1]:
        feat = feat.strip()
        if feat and (feat[1:] in CURL_FEATURES | SALVO_FEATURES
                     if feat.startswith("!") else feat not in FEATURES):
            return "feature " + feat
    for name, _ in setenv_pairs(lines):
        if name in ("HOME", "CURL_HOME", "XDG_CONFIG_HOME") or name.startswith("LD_"):
            return "<setenv> " + name
    text = "".join(lines)
    for var in sorted(set(VAR_RE.findall(text)) - set(PROVIDED_VARS)):
        return "variable %" + var
    for cmd in get_part(lines, "reply", "servercmd")[1]:
        if cmd.strip() and not cmd.strip().startswith(KNOWN_SERVERCMDS):
            return "servercmd " + cmd.split()[0]
    if get_part(lines, "reply", "connect")[0] is not None:
        return "CONNECT reply"
    for sect, part in (("verify", "strippart"), ("verify", "stripfile"),
                       ("verify", "stripfile1"), ("verify", "stripfile2")):
        if any(perl_op(op) is None for op in get_part(lines, sect, part)[1]):
            return "untranslatable <%s>" % part
    if get_part(lines, "verify", "upload")[1] or get_part(lines, "verify", "proxy")[1]:
        return "<upload>/<proxy> check"
    cmd = part_text(lines, "client", "command").replace("\n", "")
    return tokenize_command(VAR_RE.sub("X", cmd))[1]


# -------------------------------------------------------------------- server

class Server:
    """A scripted HTTP server in the manner of curl's sws test server."""

    def __init__(self, testnum, curl_data_dir):
        self.testnum, self.data_dir = testnum, curl_data_dir
        self.lines = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind((HOSTIP, 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.log = bytearray()
        self.lock = threading.Lock()
        self.active = 0
        self.stopping = False
        self.bounce = (False, -1, -1)

    def configure(self, lines):
        self.lines = lines
        cmds = [c.strip() for c in get_part(lines, "reply", "servercmd")[1]]
        self.cmds = set(c for c in cmds if ":" not in c)
        num = lambda key: next((int(c.split(":")[1]) for c in cmds if c.startswith(key)), 0)
        self.writedelay, self.skip = num("writedelay:") / 1000.0, num("skip:")

    def start(self):
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def stop(self, grace=5.0):
        deadline = time.time() + grace
        while self.active and time.time() < deadline:
            time.sleep(0.02)
        self.stopping = True
        self.listener.close()

    def store(self, data):
        with self.lock:
            self.log += data

    def accept_loop(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.active += 1
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        closing = False
        try:
            while True:
                req = self.read_request(conn)
                if req is None:
                    break
                if not self.respond(conn, req):
                    closing = True
                    break
        except OSError:
            pass
        finally:
            if "connection-monitor" in self.cmds:
                self.store(b"[DISCONNECT]\n")
            if closing:
                time.sleep(0.05)
            conn.close()
            with self.lock:
                self.active -= 1

    def read_request(self, conn):
        """Read one request as sws does; store it; return its details or
        None when the client went away."""
        buf = b""
        while True:
            req = self.complete(buf)
            if req is not None:
                self.store(buf)
                return req
            want = 65536
            if self.skip and b"\r\n\r\n" in buf:
                want = max(1, self.pending_body)
            try:
                chunk = conn.recv(want)
            except OSError:
                chunk = b""
            if not chunk:
                self.store(buf)
                return None
            buf += chunk

    def complete(self, buf):
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head, body_len = buf[:end + 4], len(buf) - end - 4
        req = {"test": self.testnum, "part": 0, "close": False}
        m = re.match(rb"(\S+)\s+(.*?)\s*HTTP/(\d)\.(\d)", buf)
        if not m:
            req["test"] = -1
        else:
            tail = m[2][m[2].rfind(b"/") + 1:] if b"/" in m[2] else b""
            digits = re.match(rb"\d+", tail)
            if digits and int(digits[0]):
                n = int(digits[0])
                req["test"], req["part"] = (n // 10000, n % 10000) if n > 10000 else (n, 0)
        cl, chunked = None, False
        for line in head.split(b"\n"):
            low = line.lower()
            if cl is None and low.startswith(b"content-length:"):
                value = line[15:].lstrip()
                num = re.match(rb"\d+", value)
                if not num or not value[len(num[0]):len(num[0]) + 1].isspace():
                    req["close"] = True
                    return req
                cl = max(0, int(num[0]) - self.skip)
            elif low.startswith(b"transfer-encoding: chunked"):
                chunked = True
            elif "no-expect" in self.cmds and low.startswith(b"expect: 100-continue"):
                cl = 0
        self.pending_body = (cl or 0) - body_len
        if chunked:
            zero = buf.find(b"\r\n0\r\n")
            if b"\r\n0\r\n\r\n" in buf or (zero >= 0 and buf.rfind(b"\r\n\r\n") > zero):
                return self.auth_parts(buf, req)
            return None
        if "auth_required" in self.cmds and b"Authorization:" not in buf:
            return self.auth_parts(buf, req)
        if cl and body_len < cl:
            return None
        return self.auth_parts(buf, req)

    def auth_parts(self, buf, req):
        if b"Authorization: Digest" in buf:
            req["part"] += 1000
        elif b"Authorization: NTLM TlRMTVNTUAAD" in buf:
            req["part"] += 1002
        elif b"Authorization: NTLM TlRMTVNTUAAB" in buf:
            req["part"] += 1001
        elif req["part"] >= 1000 and b"Authorization: Basic" in buf:
            req["part"] += 1
        return req

    def reply_part(self, test, part):
        lines = self.lines
        if test != self.testnum:
            path = os.path.join(self.data_dir, "test%d" % test)
            if not os.path.exists(path):
                return None
            with open(path, "rb") as f:
                lines = split_lines(f.read().decode("latin-1"))
        attrs, body = get_part(lines, "reply", "data%s" % (part or ""))
        text = "".join(body)
        if attrs and "nonewline" in attrs and text:
            text = text[:-1]
        return text.encode("latin-1")

    def respond(self, conn, req):
        """Send the reply; return True to keep the connection."""
        if "idle" in self.cmds:
            return True
        if "stream" in self.cmds:
            while True:
                conn.sendall(b"a string to stream 01234567890\n")
        if req["test"] < 0:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n"
                         b"Content-Type: text/html\r\n\r\nNot Found\n")
            return False
        bouncing, btest, bpart = self.bounce
        if bouncing and (req["test"], req["part"]) == (btest, bpart):
            req["part"] += 1
        data = self.reply_part(req["test"], req["part"])
        if data is None:
            return False
        keep = not (b"swsclose" in data or not data or "swsclose" in self.cmds
                    or req["close"])
        self.bounce = (b"swsbounce" in data, req["test"], req["part"])
        for i in range(0, len(data), 20):
            conn.sendall(data[i:i + 20])
            if self.writedelay:
                time.sleep(self.writedelay)
        for cmd in get_part(self.lines, "reply", "postcmd")[1]:
            m = re.match(r"\s*wait (\d+)", cmd)
            if m:
                time.sleep(int(m[1]))
        return keep


# -------------------------------------------------------------------- runner

def free_port():
    with socket.socket() as s:
        s.bind((HOSTIP, 0))
        return s.getsockname()[1]


def apply_ops(text, ops):
    """Apply <stripfile>-style ops line by line; emptied lines vanish."""
    lines = split_lines(text)
    for op in ops:
        fn = perl_op(op)
        lines = [l for l in (fn(x) for x in lines) if l]
    return "".join(lines)


def expected_text(lines, section, part):
    attrs, body = get_part(lines, section, part)
    attrs = attrs or {}
    if "nonewline" in attrs and body:
        body[-1] = chomp(body[-1])
    if "crlf" in attrs:
        nl = Newlines()
        body = [nl.fix(l) for l in body]
    return "".join(body)


def expected_data(lines):
    if get_part(lines, "reply", "datacheck")[0] is not None:
        return "".join(expected_text(lines, "reply", "datacheck" + s)
                       for s in ("", "1", "2", "3", "4"))
    return expected_text(lines, "reply", "data")


def check_protocol(lines, sent, notes):
    """Compare the request bytes; return (expected, actual) if they differ."""
    attrs, body = get_part(lines, "verify", "protocol")
    if body and "nonewline" in (attrs or {}):
        body[-1] = chomp(body[-1])
    want, got = body, split_lines(sent.decode("latin-1"))
    for rx in [l.rstrip("\n") for l in get_part(lines, "verify", "strip")[1]]:
        if rx:
            want = [l for l in want if not re.search(rx, l)]
            got = [l for l in got if not re.search(rx, l)]
    for op in get_part(lines, "verify", "strippart")[1]:
        fn = perl_op(op)
        got = [fn(l) for l in got]
    if "crlf" in (attrs or {}):
        want = [re.sub(r"\r*\n", "\r\n", l, count=1) for l in want]
    default_ua = "User-Agent: curl/%s" % CURL_VERSION
    if any(l.startswith(default_ua) for l in want):
        others = {l for l in want if l.startswith("User-Agent:")} - {default_ua + "\r\n"}
        sent_ua = [l.strip() for l in got if l.startswith("User-Agent:")]
        if not sent_ua:
            notes.append("no User-Agent sent")
        elif sent_ua[0] != default_ua:
            notes.append("sent " + sent_ua[0])
        want = [l for l in want if not l.startswith(default_ua)]
        got = [l for l in got if not l.startswith("User-Agent:") or l in others]
    want, got = "".join(want), "".join(got)
    return None if want == got else (want, got)


def run_case(num, raw_lines, opts):
    """Run one case; return its result record."""
    workdir = tempfile.mkdtemp(prefix="curl-suite-%d-" % num, dir=opts.tmp)
    os.mkdir(os.path.join(workdir, "log"))
    server = Server(num, opts.data_dir)
    variables = {
        "HOSTIP": HOSTIP, "CLIENTIP": HOSTIP, "HTTPPORT": str(server.port),
        "NOLISTENPORT": str(free_port()), "TESTNUMBER": str(num), "PWD": workdir,
        "POSIX_PWD": workdir, "FILE_PWD": workdir, "SRCDIR": opts.tests_dir,
        "VERSION": CURL_VERSION, "USER": getpass.getuser(), "LOGDIR": "log",
    }
    lines = preprocess(raw_lines, variables)
    server.configure(lines)
    server.start()
    for suffix in ("", "1", "2", "3", "4"):
        attrs, body = get_part(lines, "client", "file" + suffix)
        if attrs and attrs.get("name"):
            content = "".join(body)
            if "nonewline" in attrs:
                content = chomp(content)
            path = os.path.join(workdir, attrs["name"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(content.encode("latin-1"))
    cmd_attrs, _ = get_part(lines, "client", "command")
    option = cmd_attrs.get("option", "")
    has_stdout = get_part(lines, "verify", "stdout")[0] is not None
    curlout = "log/curl%d.out" % num
    prefix = []
    if "no-output" not in option and (not has_stdout or "force-output" in option):
        prefix += ["--output", curlout]
    if "no-include" not in option:
        prefix += ["--include"]
    args = shlex.split(part_text(lines, "client", "command").replace("\n", ""))
    argv = opts.client_argv + prefix + args
    stdin_attrs, stdin_body = get_part(lines, "client", "stdin")
    stdin = "".join(stdin_body)
    if stdin_attrs and "nonewline" in stdin_attrs:
        stdin = chomp(stdin)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["CURL_HOME"] = workdir
    for name, value in setenv_pairs(lines):
        env.pop(name, None) if not value else env.__setitem__(name, value)
    started = time.time()
    result = {"case": num, "name": part_text(lines, "client", "name").strip(),
              "argv": argv[len(opts.client_argv):], "notes": [], "reasons": []}
    try:
        proc = subprocess.run(argv, cwd=workdir, env=env, capture_output=True,
                              input=stdin.encode("latin-1"), timeout=opts.timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = None, e.stdout or b"", e.stderr or b""
    server.stop(grace=2.0 if code is None else 5.0)
    for name, data in (("stdout", out), ("stderr", err)):
        with open(os.path.join(workdir, "log", "%s%d" % (name, num)), "wb") as f:
            f.write(data)
    result["seconds"] = round(time.time() - started, 2)
    result["exit"] = code
    diffs = verify(lines, workdir, curlout, code, out, err, bytes(server.log), result)
    result["status"] = "FAIL" if result["reasons"] else "PASS"
    if opts.verbose and diffs:
        result["diffs"] = diffs
    if opts.keep:
        print("  work directory: " + workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("latin-1")
    except OSError:
        return ""


def verify(lines, workdir, curlout, code, out, err, sent, result):
    """Fill result["reasons"]; return a list of (label, expected, actual)."""
    reasons, diffs = result["reasons"], []

    def compare(label, want, got):
        if want != got:
            reasons.append(label + " differs")
            diffs.append((label, want, got))

    if code is None:
        reasons.append("timeout")
    stripfile = get_part(lines, "verify", "stripfile")[1]
    for stream, data in (("stdout", out), ("stderr", err)):
        if get_part(lines, "verify", stream)[0] is not None:
            compare(stream, expected_text(lines, "verify", stream),
                    apply_ops(data.decode("latin-1"), stripfile))
    if get_part(lines, "verify", "protocol")[1]:
        bad = check_protocol(lines, sent, result["notes"])
        if bad and not bad[1]:
            reasons.append("no request received")
        elif bad:
            compare("protocol", *bad)
    data_attrs = get_part(lines, "reply", "data")[0] or {}
    want = expected_data(lines)
    if "nocheck" not in data_attrs and (want or "sendzero" in data_attrs):
        compare("output", want, read_file(os.path.join(workdir, curlout)))
    for suffix in ("", "1", "2", "3", "4"):
        attrs, _ = get_part(lines, "verify", "file" + suffix)
        if attrs is None:
            continue
        got = apply_ops(read_file(os.path.join(workdir, attrs.get("name", ""))),
                        get_part(lines, "verify", "stripfile" + suffix)[1])
        compare("file %s" % attrs.get("name"),
                expected_text(lines, "verify", "file" + suffix), got)
    codes = part_text(lines, "verify", "errorcode").strip() or "0"
    allowed = [int(c) for c in re.split(r" *, *", codes) if c.strip()]
    if code is not None and code not in allowed:
        reasons.insert(0, "exit %s≠%s" % (code, codes))
    return diffs


def show_diff(label, want, got):
    mark = lambda t: [l.replace("\r", "[CR]").replace("\n", "[LF]") + "\n"
                      for l in split_lines(t)]
    sys.stdout.write("    --- %s (expected) / +++ (actual)\n" % label)
    for line in list(difflib.unified_diff(mark(want), mark(got), n=2))[2:]:
        sys.stdout.write("    " + line)


# ---------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--curl-src", required=True, help="a curl source tree (7.88)")
    ap.add_argument("--salvo", default=".build/debug/salvo", help="salvo binary")
    ap.add_argument("--client", choices=("salvo", "curl"), default="salvo")
    ap.add_argument("--only", help="comma-separated case numbers")
    ap.add_argument("--timeout", type=float, default=15.0, help="seconds per case")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--list", action="store_true", help="only list the selection")
    ap.add_argument("--keep", action="store_true", help="keep work directories")
    ap.add_argument("-v", "--verbose", action="store_true", help="show diffs")
    opts = ap.parse_args()

    opts.tests_dir = os.path.abspath(os.path.join(opts.curl_src, "tests"))
    opts.data_dir = os.path.join(opts.tests_dir, "data")
    if not os.path.isdir(opts.data_dir):
        sys.exit("no tests/data under %s" % opts.curl_src)
    if opts.client == "curl":
        curl = shutil.which("curl") or sys.exit("curl not found")
        opts.client_argv = [curl]
    else:
        salvo = os.path.abspath(opts.salvo)
        if not os.access(salvo, os.X_OK) and not opts.list:
            sys.exit("salvo binary not found: %s" % salvo)
        opts.client_argv = [salvo, "get"]

    disabled = disabled_tests(opts.data_dir)
    numbers = sorted(int(n[4:]) for n in os.listdir(opts.data_dir)
                     if re.fullmatch(r"test\d+", n))
    only = {int(n) for n in opts.only.split(",")} if opts.only else None
    selected, skipped = [], collections.Counter()
    for num in numbers:
        with open(os.path.join(opts.data_dir, "test%d" % num), "rb") as f:
            raw = split_lines(f.read().decode("latin-1"))
        why = select(num, raw, disabled)
        if why is None:
            selected.append((num, raw))
        else:
            skipped[re.sub(r"^(option|feature|servercmd|variable) .*", r"\1 (various)", why)
                    if not opts.verbose else why] += 1
    print("selected %d of %d cases: %s" % (len(selected), len(numbers),
                                          " ".join(str(n) for n, _ in selected)))
    print("skipped:")
    for why, count in skipped.most_common():
        print("  %4d  %s" % (count, why))
    if opts.list:
        return
    if only:
        selected = [(n, raw) for n, raw in selected if n in only]
        missing = only - {n for n, _ in selected}
        if missing:
            print("not selectable: %s" % ", ".join(map(str, sorted(missing))))

    opts.tmp = tempfile.mkdtemp(prefix="curl-suite-")
    results = []
    for num, raw in selected:
        res = run_case(num, raw, opts)
        results.append(res)
        line = "%-4s %4d  %s" % (res["status"], num, res["name"][:50])
        if res["reasons"]:
            line += "  [%s]" % "; ".join(res["reasons"])
        if res["notes"]:
            line += "  (%s)" % "; ".join(sorted(set(res["notes"])))
        print(line, flush=True)
        for label, want, got in res.pop("diffs", []):
            show_diff(label, want, got)
    if not opts.keep:
        shutil.rmtree(opts.tmp, ignore_errors=True)
    passed = sum(r["status"] == "PASS" for r in results)
    print("passed %d of %d (%s)" % (passed, len(results), opts.client))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"client": opts.client, "passed": passed, "total": len(results),
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
