#!/usr/bin/env python3
"""Run the plain-HTTP cases of curl's own test suite against `salvo get`.

A developer tool, not part of `make test`. It reads the case files of a curl
source tree (tests/data/testNNN, in the format of curl 7.88), keeps the cases
that need only a plain HTTP server and options `salvo get` understands, and
runs each one the way curl's runtests.pl does: a scripted server on a free
loopback port answers with the case's <reply> parts (in the manner of curl's
sws test server), the client runs with `--output log/curlNNN.out --include`
put in front of the case's options (unless the case says otherwise), and then
the exit code, stdout/stderr, the saved output, output files and the request
bytes the server received are checked against the case's <verify> section.

    scripts/curl-suite.py --curl-src ~/src/curl                 # salvo
    scripts/curl-suite.py --curl-src ~/src/curl --client curl   # reference
    scripts/curl-suite.py --curl-src ~/src/curl --only 1,3 -v   # with diffs

The User-Agent line is not held against the client: the expected default
`User-Agent: curl/<version>` line is dropped from both sides before the
request bytes are compared, and what the client sent instead is shown as a
note. Nothing but loopback traffic is involved.
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
SUFFIXES = ("", "1", "2", "3", "4")

# What each client offers, in runtests' feature names. A case runs only if
# salvo has all it requires and curl has nothing it must lack.
CURL_FEATURES = set("""
    http https ftp ftps file dict gopher gophers imap imaps pop3 pop3s smtp smtps
    rtsp scp sftp smb smbs telnet tftp mqtt ldap ldaps alt-svc brotli zstd
    GSS-API HSTS http/2 https-proxy idn ipv6 Kerberos large_file libz NTLM
    NTLM_WB PSL SPNEGO SSL OpenSSL crypto threadsafe TLS-SRP unix-sockets
    threaded-resolver libssh2 cookies DoH HTTP-auth Mime netrc parsedate proxy
    shuffle-dns typecheck verbose-strings wakeup headers-api xattr""".split())
SALVO_FEATURES = set("http https libz large_file ipv6 SSL OpenSSL threadsafe proxy unix-sockets".split())

# curl options `salvo get` supports: long name -> takes a value.
LONG_OPTIONS = dict.fromkeys("""request header data data-ascii data-binary data-raw
    data-urlencode upload-file output output-dir dump-header write-out max-time
    connect-timeout max-filesize max-redirs proxy proxy-user noproxy resolve
    unix-socket user netrc-file parallel-max""".split(), True)
LONG_OPTIONS.update(dict.fromkeys("""include head silent show-error verbose fail
    insecure compressed location location-trusted proxytunnel ipv4 ipv6 get
    remote-name remote-name-all remote-header-name create-dirs netrc
    netrc-optional parallel fail-early""".split(), False))
SHORT_WITH_VALUE, SHORT_FLAGS = set("XHdTomxUuDw"), set("iIsSvfkLp46OJnGZ")

# Test-file variables: those provided here, and runtests' others (a case
# using one of those is skipped).
PROVIDED_VARS = """HOSTIP CLIENTIP HTTPPORT NOLISTENPORT TESTNUMBER PWD POSIX_PWD
    FILE_PWD SRCDIR VERSION USER LOGDIR""".split()
OTHER_VARS = """CLIENT6IP HOST6IP CURL FTP6PORT FTPPORT FTPSPORT FTPTIME2 FTPTIME3
    GOPHER6PORT GOPHERPORT GOPHERSPORT HTTP6PORT HTTP2PORT HTTP2TLSPORT HTTP3PORT
    HTTPSPORT HTTPSPROXYPORT HTTPTLS6PORT HTTPTLSPORT HTTPUNIXPATH SOCKSUNIXPATH
    IMAP6PORT IMAPPORT MQTTPORT TELNETPORT POP36PORT POP3PORT PROXYPORT RTSP6PORT
    RTSPPORT SMBPORT SMBSPORT SMTP6PORT SMTPPORT SOCKSPORT SSHPORT SSHSRVMD5
    SSHSRVSHA256 SSH_PWD TFTP6PORT TFTPPORT DICTPORT H2CVER""".split()
VAR_RE = re.compile("%(" + "|".join(sorted(PROVIDED_VARS + OTHER_VARS, key=len,
                                          reverse=True)) + ")")
SERVER_COMMANDS = ("auth_required", "idle", "stream", "connection-monitor",
                   "swsclose", "no-expect", "writedelay:", "skip:")


# ---------------------------------------------------------------- test files
# Files are handled as latin-1 text, so every byte maps to one character.

def split_lines(text):
    """Split on LF only (CRs and other bytes stay), keeping the endings."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def get_part(lines, section, part):
    """(attributes, content lines) of <section><part>, read the way
    runtests does; the attributes are None if the part is absent."""
    attrs, out, depth = None, [], 0
    opening = re.compile(r"^ *<%s[ >]" % re.escape(part))
    closing = re.compile(r"^ *</%s[ >]" % re.escape(part))
    for line in lines:
        if depth == 0:
            depth = 1 if re.match(r"^ *<" + re.escape(section), line) else 0
        elif opening.match(line):
            if depth > 1:
                out.append(line)
            else:
                attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', line))
            depth += 1
        elif depth >= 2 and closing.match(line):
            if depth > 2:
                out.append(line)
            depth -= 1
        elif re.match(r"^ *</" + re.escape(section), line):
            break
        elif depth >= 2:
            out.append(line)
    if attrs and "base64" in attrs:
        raw = base64.b64decode("".join(out)).decode("latin-1")
        out = [raw] if raw else []
    elif attrs and "hex" in attrs:
        out = [bytes.fromhex(re.sub("[^0-9A-Fa-f]", "", l)).decode("latin-1") for l in out]
    return attrs, out


def part_text(lines, section, part):
    return "".join(get_part(lines, section, part)[1])


def chomp(text):
    return text[:-1] if text.endswith("\n") else text


class Newlines:
    """runtests' guess for crlf="yes": lines that look like a status line,
    request line or header (and the blank line after them) get CRLF."""

    def __init__(self):
        self.after_header = False

    def fix(self, line):
        if (re.search(r"^HTTP/(1.1|1.0|2|3) [1-5][^\r]*\Z", line) or
                re.search(r"^(GET|POST|PUT|DELETE) \S+ HTTP/\d+(\.\d+)?", line) or
                (re.search(r"^[a-z0-9_-]+: [^\r]*\Z", line, re.I) and
                 not re.match(r"^curl: \(\d+\) ", line))):
            self.after_header = True
            return re.sub(r"\r*\n", "\r\n", line, count=1)
        if line == "\n" and self.after_header:
            line = "\r\n"
        self.after_header = False
        return line


def expand_macros(line):
    """%b64[..]b64%, %hex[..]hex% and %repeat[N x ..]% (the first of each)."""
    unpct = lambda s: re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m[1], 16)), s)
    line = re.sub(r"%b64\[(.*)\]b64%", lambda m: base64.b64encode(
        unpct(m[1]).encode("latin-1")).decode(), line, count=1, flags=re.I)
    line = re.sub(r"%hex\[(.*)\]hex%", lambda m: unpct(m[1]), line, count=1, flags=re.I)
    return re.sub(r"%repeat\[(\d+) x (.*)\]%", lambda m: unpct(m[2]) * int(m[1]),
                  line, count=1, flags=re.I)


def preprocess(lines, variables):
    """%if/%else/%endif, variables, macros, and crlf="yes" on <data*> parts."""
    out, show, data_crlf, newlines = [], True, False, Newlines()
    for line in lines:
        cond = re.match(r"^ *%if (.*)", line)
        if cond:
            name = cond[1].strip()
            show = (name.lstrip("!") in SALVO_FEATURES) != name.startswith("!")
            continue
        if re.match(r"^ *%(else|endif)", line):
            show = not show if "%else" in line else True
            continue
        if not show:
            continue
        tag = re.match(r"^ *<data(.*)>", line)
        if tag and 'crlf="yes"' in tag[1]:
            data_crlf = True
        elif data_crlf and re.match(r"^ *</data", line):
            data_crlf = False
        line = expand_macros(VAR_RE.sub(lambda v: variables.get(v[1], v[0]), line))
        out.append(newlines.fix(line) if data_crlf else line)
    return out


def perl_op(op):
    """Turn a one-line Perl op from <strippart>/<stripfile> (s/// or
    `$_ = '' if /re/`) into a function on a line; None if it is beyond this."""
    op = op.strip().rstrip(";").strip()
    if not op or op.startswith("#"):
        return lambda s: s
    match = re.fullmatch(r"\$_ = '' if /(.*)/", op)
    if match:
        rx = re.compile(match[1])
        return lambda s: "" if rx.search(s) else s
    if len(op) < 4 or op[0] != "s" or op[1].isalnum() or op[1].isspace():
        return None
    delim, fields, i = op[1], [""], 2
    while i < len(op):
        if op[i] == "\\" and i + 1 < len(op):
            fields[-1] += op[i + 1] if op[i + 1] == delim else op[i:i + 2]
            i += 2
            continue
        if op[i] == delim:
            fields.append("")
        else:
            fields[-1] += op[i]
        i += 1
    if len(fields) != 3 or not set(fields[2]) <= set("gimsx"):
        return None
    pattern, repl, flags = fields
    repl = re.sub(r"\\([^nrt\\])", r"\1", re.sub(r"\$\{?(\d)\}?", r"\\g<\1>", repl))
    reflags = sum(f for c, f in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X))
                  if c in flags)
    try:
        rx = re.compile(pattern, reflags)
        rx.sub(repl, "")
    except (re.error, IndexError):
        return None
    return lambda s: rx.sub(repl, s, count=0 if "g" in flags else 1)


# ----------------------------------------------------------------- selection

def check_command(cmd):
    """Skip reason for a curl command line salvo cannot take, else None."""
    try:
        args = shlex.split(cmd)
    except ValueError:
        return "command", "unparsable command line"
    if any(a in ("|", ";", "&", "&&") or a.startswith(("<", ">")) for a in args):
        return "command", "shell syntax in command"
    urls, i = [], 0
    while i < len(args):
        arg, name, value = args[i], None, ""
        if arg.startswith("--") and len(arg) > 2:
            name = arg[2:]
            if name not in LONG_OPTIONS:
                return "unsupported option", arg
            if LONG_OPTIONS[name]:
                i += 1
                value = args[i] if i < len(args) else ""
        elif arg.startswith("-") and len(arg) > 1:
            for j, c in enumerate(arg[1:]):
                if c in SHORT_WITH_VALUE:
                    name, value = c, arg[j + 2:]
                    if not value:
                        i += 1
                        value = args[i] if i < len(args) else ""
                    break
                if c not in SHORT_FLAGS:
                    return "unsupported option", "-" + c
        else:
            urls.append(arg)
        if name in ("T", "upload-file") and re.search(r"[\[\]{}]", value):
            return "command", "globbing in -T"
        i += 1
    if not urls:
        return "command", "no URL"
    for url in urls:
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", url) and \
                not url.lower().startswith("http://"):
            return "command", "non-http URL"
        if re.search(r"[\[\]{}]", url):
            return "command", "URL globbing"
    return None


def setenv_pairs(lines):
    return [l.strip().split("=", 1) for l in get_part(lines, "client", "setenv")[1]
            if re.match(r"^\s*[A-Za-z_]\w*=", l)]


def disabled_tests(data_dir):
    path = os.path.join(data_dir, "DISABLED")
    if not os.path.exists(path):
        return set()
    with open(path, encoding="latin-1") as f:
        kept = preprocess(split_lines(f.read()), {})
    return {int(re.match(r"\d+", l)[0]) for l in kept if re.match(r"\d+", l)}


def skip_reason(num, lines, disabled):
    """(category, detail) saying why a case cannot run here, or None."""
    servers = [l.strip() for l in get_part(lines, "client", "server")[1] if l.strip()]
    if servers != ["http"]:
        return "server is not plain http", " ".join(servers)
    if num in disabled:
        return "listed in DISABLED", ""
    for part in ("tool", "precheck", "postcheck"):
        if get_part(lines, "client", part)[1]:
            return "needs <%s>" % part, ""
    cmd_attrs = get_part(lines, "client", "command")[0]
    if cmd_attrs is None or cmd_attrs.get("type") in ("perl", "shell"):
        return "command", "perl/shell or none"
    for feat in (f.strip() for f in get_part(lines, "client", "features")[1]):
        if feat and (feat[1:] in CURL_FEATURES if feat.startswith("!")
                     else feat not in SALVO_FEATURES):
            return "feature", feat
    for name, _ in setenv_pairs(lines):
        if name in ("HOME", "CURL_HOME", "XDG_CONFIG_HOME") or name.startswith("LD_"):
            return "<setenv> of config/preload", name
    for var in sorted(set(VAR_RE.findall("".join(lines))) - set(PROVIDED_VARS)):
        return "variable", "%" + var
    for cmd in (c.strip() for c in get_part(lines, "reply", "servercmd")[1]):
        if cmd and not cmd.startswith(SERVER_COMMANDS):
            return "server command", cmd.split()[0]
    for part in ("strippart", "stripfile", "stripfile1", "stripfile2"):
        if any(perl_op(op) is None for op in get_part(lines, "verify", part)[1]):
            return "untranslatable <%s>" % part, ""
    for section, part in (("reply", "connect"), ("verify", "upload"), ("verify", "proxy")):
        if get_part(lines, section, part)[1]:
            return "needs <%s>" % part, ""
    return check_command(VAR_RE.sub("X", part_text(lines, "client", "command")
                                    .replace("\n", "")))


# -------------------------------------------------------------------- server

class Server:
    """A scripted HTTP server that behaves like curl's sws test server."""

    # sws keeps this flag for its whole life: after one chunked request ends
    # in a trailer, later chunked requests are complete after their headers.
    zeroed_chunk_seen = False

    def __init__(self, testnum, data_dir):
        self.testnum, self.data_dir, self.lines = testnum, data_dir, []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind((HOSTIP, 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.log, self.lock = bytearray(), threading.Lock()
        self.active, self.stopping, self.pending = 0, False, 0
        self.bounce = (False, -1, -1)

    def start(self, lines):
        self.lines = lines
        cmds = [c.strip() for c in get_part(lines, "reply", "servercmd")[1]]
        self.cmds = {c for c in cmds if ":" not in c}
        number = lambda key: next((int(c.split(":")[1]) for c in cmds if c.startswith(key)), 0)
        self.writedelay, self.skip = number("writedelay:") / 1000.0, number("skip:")
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def stop(self, grace):
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
                conn = self.listener.accept()[0]
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
            while not closing:
                req = self.read_request(conn)
                if req is None:
                    break
                closing = not self.respond(conn, req)
        except OSError:
            pass
        finally:
            if "connection-monitor" in self.cmds:
                self.store(b"[DISCONNECT]\n")
            if closing:
                time.sleep(0.05)  # as sws does, so the client reads before the close
            conn.close()
            with self.lock:
                self.active -= 1

    def read_request(self, conn):
        """Read and log one request; None once the client has gone."""
        buf = b""
        while True:
            req = self.complete(buf)
            if req is not None:
                self.store(buf)
                return req
            want = max(1, self.pending) if self.skip and b"\r\n\r\n" in buf else 65536
            try:
                chunk = conn.recv(want)
            except OSError:
                chunk = b""
            if not chunk:
                self.store(buf)
                return None
            buf += chunk

    def complete(self, buf):
        """The request's test and part numbers once sws would consider it
        complete, else None."""
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        body_len = len(buf) - end - 4
        req = {"test": self.testnum, "part": 0}
        line = re.match(rb"(\S+)\s+(.*?)\s*HTTP/\d\.\d", buf)
        if not line:
            req["test"] = -1
        else:
            number = re.match(rb"\d+", line[2][line[2].rfind(b"/") + 1:]) \
                if b"/" in line[2] else None
            if number and int(number[0]):
                n = int(number[0])
                req["test"], req["part"] = (n // 10000, n % 10000) if n > 10000 else (n, 0)
        length, chunked = None, False
        for header in buf[:end + 4].split(b"\n"):
            low = header.lower()
            if length is None and low.startswith(b"content-length:"):
                value = re.match(rb"\s*(\d+)\s", header[15:])
                if not value:
                    return self.with_auth(buf, req)
                length = max(0, int(value[1]) - self.skip)
            elif low.startswith(b"transfer-encoding: chunked"):
                chunked = True
            elif "no-expect" in self.cmds and low.startswith(b"expect: 100-continue"):
                length = 0
        self.pending = (length or 0) - body_len
        if chunked:
            zero = buf.find(b"\r\n0\r\n")
            if b"\r\n0\r\n\r\n" in buf or (zero >= 0 and buf.rfind(b"\r\n\r\n") > zero):
                return self.with_auth(buf, req)
            if zero >= 0:
                Server.zeroed_chunk_seen = True
            return self.with_auth(buf, req) if Server.zeroed_chunk_seen and zero < 0 else None
        if "auth_required" in self.cmds and b"Authorization:" not in buf:
            return self.with_auth(buf, req)
        return None if length and body_len < length else self.with_auth(buf, req)

    @staticmethod
    def with_auth(buf, req):
        """sws picks other parts for requests carrying credentials."""
        for marker, add in ((b"Authorization: Digest", 1000),
                            (b"Authorization: NTLM TlRMTVNTUAAD", 1002),
                            (b"Authorization: NTLM TlRMTVNTUAAB", 1001)):
            if marker in buf:
                req["part"] += add
                return req
        if req["part"] >= 1000 and b"Authorization: Basic" in buf:
            req["part"] += 1
        return req

    def reply_part(self, test, part):
        lines = self.lines
        if test != self.testnum:  # sws falls back to the unprocessed file
            path = os.path.join(self.data_dir, "test%d" % test)
            if not os.path.exists(path):
                return None
            with open(path, "rb") as f:
                lines = split_lines(f.read().decode("latin-1"))
        attrs, body = get_part(lines, "reply", "data%s" % (part or ""))
        text = "".join(body)
        return (text[:-1] if attrs and "nonewline" in attrs else text).encode("latin-1")

    def respond(self, conn, req):
        """Send the reply; return whether the connection stays open."""
        if "idle" in self.cmds:
            return True
        while "stream" in self.cmds:
            conn.sendall(b"a string to stream 01234567890\n")
        if req["test"] < 0:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n")
            return False
        bouncing, test, part = self.bounce
        if bouncing and (req["test"], req["part"]) == (test, part):
            req["part"] += 1
        data = self.reply_part(req["test"], req["part"])
        if data is None:
            return False
        self.bounce = (b"swsbounce" in data, req["test"], req["part"])
        for i in range(0, len(data), 20):  # small pieces, as sws sends them
            conn.sendall(data[i:i + 20])
            time.sleep(self.writedelay)
        for cmd in get_part(self.lines, "reply", "postcmd")[1]:
            wait = re.match(r"\s*wait (\d+)", cmd)
            time.sleep(int(wait[1]) if wait else 0)
        return not (b"swsclose" in data or not data or "swsclose" in self.cmds)


# ------------------------------------------------------------- verification

def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("latin-1")
    except OSError:
        return ""


def apply_ops(text, ops):
    """Apply <stripfile> ops line by line; lines that become empty vanish."""
    lines = split_lines(text)
    for fn in map(perl_op, ops):
        lines = [l for l in map(fn, lines) if l]
    return "".join(lines)


def expected_text(lines, section, part):
    attrs, body = get_part(lines, section, part)
    if body and "nonewline" in (attrs or {}):
        body[-1] = chomp(body[-1])
    if "crlf" in (attrs or {}):
        newlines = Newlines()
        body = [newlines.fix(l) for l in body]
    return "".join(body)


def expected_output(lines):
    if get_part(lines, "reply", "datacheck")[0] is not None:
        return "".join(expected_text(lines, "reply", "datacheck" + s) for s in SUFFIXES)
    return expected_text(lines, "reply", "data")


def compare_protocol(lines, sent, notes):
    """(expected, actual) request bytes after the strip rules, with the
    default User-Agent line taken out of both."""
    attrs, want = get_part(lines, "verify", "protocol")
    if want and "nonewline" in attrs:
        want[-1] = chomp(want[-1])
    got = split_lines(sent.decode("latin-1"))
    for rx in (l.rstrip("\n") for l in get_part(lines, "verify", "strip")[1]):
        if rx:
            want = [l for l in want if not re.search(rx, l)]
            got = [l for l in got if not re.search(rx, l)]
    for fn in map(perl_op, get_part(lines, "verify", "strippart")[1]):
        got = list(map(fn, got))
    if "crlf" in attrs:
        want = [re.sub(r"\r*\n", "\r\n", l, count=1) for l in want]
    default = "User-Agent: curl/" + CURL_VERSION
    if any(l.startswith(default) for l in want):
        wanted = {l for l in want if l.startswith("User-Agent:")} - {default + "\r\n"}
        sent_ua = [l.strip() for l in got if l.startswith("User-Agent:")]
        if sent_ua != [default]:
            notes.append("sent " + sent_ua[0] if sent_ua else "no User-Agent sent")
        want = [l for l in want if not l.startswith(default)]
        got = [l for l in got if not l.startswith("User-Agent:") or l in wanted]
    return "".join(want), "".join(got)


def verify(lines, workdir, outfile, code, out, err, sent, result):
    """Fill in result's reasons and diffs."""
    reasons = result["reasons"]

    def compare(label, want, got):
        if want != got:
            reasons.append(label + " differs")
            result["diffs"].append({"what": label, "diff": diff_lines(want, got)})

    if code is None:
        reasons.append("timeout")
    for stream, data in (("stdout", out), ("stderr", err)):
        if get_part(lines, "verify", stream)[0] is not None:
            compare(stream, expected_text(lines, "verify", stream),
                    apply_ops(data.decode("latin-1"), get_part(lines, "verify", "stripfile")[1]))
    if get_part(lines, "verify", "protocol")[1]:
        want, got = compare_protocol(lines, sent, result["notes"])
        if want and not got:
            reasons.append("no request received")
        else:
            compare("protocol", want, got)
    data_attrs, want = get_part(lines, "reply", "data")[0] or {}, expected_output(lines)
    if "nocheck" not in data_attrs and (want or "sendzero" in data_attrs):
        compare("output", want, read_file(os.path.join(workdir, outfile)))
    for suffix in SUFFIXES:
        attrs = get_part(lines, "verify", "file" + suffix)[0]
        if attrs is not None:
            got = apply_ops(read_file(os.path.join(workdir, attrs.get("name", ""))),
                            get_part(lines, "verify", "stripfile" + suffix)[1])
            compare("file " + attrs.get("name", ""),
                    expected_text(lines, "verify", "file" + suffix), got)
    codes = part_text(lines, "verify", "errorcode").strip() or "0"
    if code is not None and code not in [int(c) for c in re.split(r" *, *", codes) if c]:
        reasons.insert(0, "exit %s≠%s" % (code, codes))


def diff_lines(want, got):
    """A unified diff from expected to actual, showing CR, LF and odd bytes."""
    def mark(text):
        return [re.sub(r"[^\x20-\x7e]", lambda m: "%%%02x" % ord(m[0]),
                       l.replace("\r", "[CR]").replace("\n", "[LF]"))
                for l in split_lines(text)]
    return list(difflib.unified_diff(mark(want), mark(got), n=2, lineterm=""))[2:]


# -------------------------------------------------------------------- runner

def free_port():
    with socket.socket() as s:
        s.bind((HOSTIP, 0))
        return s.getsockname()[1]


def write_client_files(lines, workdir):
    for suffix in SUFFIXES:
        attrs, body = get_part(lines, "client", "file" + suffix)
        if attrs and attrs.get("name"):
            path = os.path.realpath(os.path.join(workdir, attrs["name"]))
            if not path.startswith(workdir + os.sep):
                raise ValueError("file outside the work directory: " + attrs["name"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            content = "".join(body)
            with open(path, "wb") as f:
                f.write((chomp(content) if "nonewline" in attrs else content).encode("latin-1"))


def run_case(num, raw_lines, opts):
    """Run one case; return its result record."""
    workdir = os.path.realpath(tempfile.mkdtemp(prefix="case%d-" % num, dir=opts.tmp))
    os.mkdir(os.path.join(workdir, "log"))
    server = Server(num, opts.data_dir)
    lines = preprocess(raw_lines, {
        "HOSTIP": HOSTIP, "CLIENTIP": HOSTIP, "HTTPPORT": str(server.port),
        "NOLISTENPORT": str(free_port()), "TESTNUMBER": str(num), "PWD": workdir,
        "POSIX_PWD": workdir, "FILE_PWD": workdir, "SRCDIR": opts.tests_dir,
        "VERSION": CURL_VERSION, "USER": getpass.getuser(), "LOGDIR": "log"})
    result = {"case": num, "name": part_text(lines, "client", "name").strip(),
              "notes": [], "reasons": [], "diffs": []}
    server.start(lines)
    # Like runtests: --output unless <stdout> is checked, --include unless told.
    option = get_part(lines, "client", "command")[0].get("option", "")
    outfile, prefix = "log/curl%d.out" % num, []
    if "no-output" not in option and ("force-output" in option or
                                      get_part(lines, "verify", "stdout")[0] is None):
        prefix += ["--output", outfile]
    if "no-include" not in option:
        prefix.append("--include")
    result["args"] = prefix + shlex.split(part_text(lines, "client", "command").replace("\n", ""))
    stdin_attrs, stdin = get_part(lines, "client", "stdin")
    stdin = "".join(stdin)
    stdin = chomp(stdin) if stdin_attrs and "nonewline" in stdin_attrs else stdin
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["CURL_HOME"] = workdir  # keep the user's .curlrc out of it
    for name, value in setenv_pairs(lines):
        env[name] = value
        if not value:
            del env[name]
    started = time.time()
    try:
        write_client_files(lines, workdir)
        proc = subprocess.run(opts.client_argv + result["args"], cwd=workdir, env=env,
                              input=stdin.encode("latin-1"), capture_output=True,
                              timeout=opts.timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = None, e.stdout or b"", e.stderr or b""
    except (OSError, ValueError) as e:
        code, out, err = -1, b"", str(e).encode()
        result["reasons"].append("setup failed: %s" % e)
    server.stop(grace=2.0 if code is None else 5.0)
    result.update(seconds=round(time.time() - started, 2), exit=code)
    for name, data in (("stdout", out), ("stderr", err)):  # runtests keeps these here
        with open(os.path.join(workdir, "log", "%s%d" % (name, num)), "wb") as f:
            f.write(data)
    verify(lines, workdir, outfile, code, out, err, bytes(server.log), result)
    result["status"] = "FAIL" if result["reasons"] else "PASS"
    if opts.keep:
        result["workdir"] = workdir
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def select_cases(opts):
    """The runnable cases as (number, lines), and a Counter of skip reasons."""
    disabled = disabled_tests(opts.data_dir)
    numbers = sorted(int(n[4:]) for n in os.listdir(opts.data_dir)
                     if re.fullmatch(r"test\d+", n))
    selected, skipped = [], collections.Counter()
    for num in numbers:
        with open(os.path.join(opts.data_dir, "test%d" % num), "rb") as f:
            lines = split_lines(f.read().decode("latin-1"))
        why = skip_reason(num, lines, disabled)
        if why:
            skipped[why] += 1
        else:
            selected.append((num, lines))
    return selected, skipped


def print_selection(selected, skipped):
    print("selected %d of %d cases: %s" % (
        len(selected), len(selected) + sum(skipped.values()),
        " ".join(str(n) for n, _ in selected)))
    print("skipped:")
    totals, details = collections.Counter(), collections.defaultdict(collections.Counter)
    for (category, detail), count in skipped.items():
        totals[category] += count
        details[category][detail] += count
    for category, count in totals.most_common():
        shown = [("%s ×%d" % (d, n)) if n > 1 else d
                 for d, n in details[category].most_common(12) if d]
        more = len(details[category]) - len(shown)
        print("  %4d  %s%s%s" % (count, category, (": " + ", ".join(shown)) if shown else "",
                                 " …(+%d more)" % more if shown and more > 0 else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--curl-src", required=True, help="a curl source tree (7.88)")
    ap.add_argument("--salvo", default=".build/debug/salvo", help="the salvo binary")
    ap.add_argument("--client", choices=("salvo", "curl"), default="salvo",
                    help="run `salvo get` (default) or the curl on PATH")
    ap.add_argument("--only", help="comma-separated case numbers to run")
    ap.add_argument("--timeout", type=float, default=15.0, help="seconds per case")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--list", action="store_true", help="only show the selection")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("-v", "--verbose", action="store_true", help="show diffs")
    opts = ap.parse_args()

    opts.tests_dir = os.path.realpath(os.path.join(opts.curl_src, "tests"))
    opts.data_dir = os.path.join(opts.tests_dir, "data")
    if not os.path.isdir(opts.data_dir):
        sys.exit("no tests/data in " + opts.curl_src)
    if opts.client == "curl":
        opts.client_argv = [shutil.which("curl") or sys.exit("curl is not on PATH")]
    else:
        opts.client_argv = [os.path.realpath(opts.salvo), "get"]
        if not opts.list and not os.access(opts.client_argv[0], os.X_OK):
            sys.exit("no salvo binary at " + opts.salvo)

    selected, skipped = select_cases(opts)
    print_selection(selected, skipped)
    if opts.list:
        return
    if opts.only:
        wanted = {int(n) for n in opts.only.split(",")}
        missing = wanted - {n for n, _ in selected}
        if missing:
            print("not selected, so not run: " + ", ".join(map(str, sorted(missing))))
        selected = [(n, lines) for n, lines in selected if n in wanted]

    opts.tmp = os.path.realpath(tempfile.mkdtemp(prefix="curl-suite-"))
    results = []
    for num, lines in selected:
        res = run_case(num, lines, opts)
        results.append(res)
        print("%-4s %4d  %s%s%s" % (
            res["status"], num, res["name"][:48],
            "  [%s]" % "; ".join(res["reasons"]) if res["reasons"] else "",
            "  (%s)" % "; ".join(sorted(set(res["notes"]))) if res["notes"] else ""),
            flush=True)
        if opts.keep:
            print("      work directory: " + res["workdir"])
        for diff in res["diffs"] if opts.verbose else []:
            print("    --- %s (expected) / +++ (actual)" % diff["what"])
            print("\n".join("    " + l for l in diff["diff"]))
    if not opts.keep:
        shutil.rmtree(opts.tmp, ignore_errors=True)
    passed = sum(r["status"] == "PASS" for r in results)
    print("passed %d of %d (%s)" % (passed, len(results), opts.client))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"client": opts.client, "client_argv": opts.client_argv,
                       "passed": passed, "total": len(results), "results": results},
                      f, indent=1)


if __name__ == "__main__":
    main()
