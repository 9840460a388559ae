#!/usr/bin/env python3
"""Scripted raw-socket HTTP/1.1 test server for Salvo's integration tests.

Usage:
    python3 fault_server.py [--host 127.0.0.1] [--port 0] [--lifetime 600]
                            [--no-parent-watch] [--verbose]

The server binds, prints exactly one line ``PORT <n>`` to stdout (flushed) and
then serves until it is killed, until ``--lifetime`` seconds have passed, or
until the process that started it goes away (its parent pid changes), so a
crashed test run never leaves it behind.  Python 3 standard library only; one
thread per connection.

Every request head is read up to CRLFCRLF, then the body (Content-Length, or a
chunked request body, which is decoded).  A request with
``Expect: 100-continue`` gets an interim ``100 Continue`` before its body is
read, unless the query has ``expect=none`` (send nothing, just read the body),
``expect=417`` (answer 417 without reading the body and close) or
``expect=final`` (answer ``code`` (default 401) at once, without reading the
body, then count every byte the client still sends on that connection until
it closes, as "after_bytes" in the request's log entry).

The scenario is the first path segment; the query string holds parameters.
Unless a scenario says otherwise, responses are keep-alive: the connection is
kept and further (also pipelined) requests on it are served.  A request with
``Connection: close`` (or an HTTP/1.0 request without keep-alive) gets
``Connection: close`` and the connection is closed after a normal response.
"Close" below means a graceful close: FIN first (shutdown), then the server
drains what the client still sends until it closes too, so the kernel does not
turn the close into a RST.  HEAD requests get no body wherever a body would
have been sent.

  Path                   Behaviour
  ---------------------  ------------------------------------------------------
  /ok                    200, Content-Length: 5, body "hello"; keep-alive.
  /truncated             Content-Length: 100, sends 10 bytes, then closes.
  /truncated-chunked     chunked; one chunk "hello", then closes without the
                         terminating 0-chunk.
  /reset                 Content-Length: 100, head + 10 bytes, ~50 ms pause,
                         then close with RST (SO_LINGER on, timeout 0).
  /garbage               sends "SPAM\r\n\r\n" (not HTTP), then closes.
  /empty                 closes without sending a byte.
  /stall                 sends nothing; holds the connection until the client
                         closes it (or the lifetime ends).  Bytes the client
                         sends meanwhile are read and ignored.
  /stall-body            head with Content-Length: 10, sends "abc", then stalls
                         like /stall.
  /one-byte              valid chunked response, body "hello world", with a
                         chunk extension (";name=value") and a trailer
                         (X-Trailer: yes), written one byte per send() with
                         TCP_NODELAY and a 1 ms sleep between bytes;
                         keep-alive.
  /chunked               valid chunked body "hello world" as 3 chunks
                         ("hello", " ", "world"), the second with ";ext=1";
                         trailer "X-Trailer: yes"; keep-alive.
  /close-delimited       HTTP/1.1 200, no Content-Length, not chunked, no
                         Connection header; body "close-delimited body" (or
                         ?n=BYTES of 'x'), then closes.
  /http10                "HTTP/1.0 200 OK", no Content-Length; body
                         "http/1.0 body", then closes.
  /continue              "100 Continue", then "103 Early Hints" with a Link
                         header, then 200 with Content-Length: 5 and body
                         "final"; keep-alive.
  /dup-cl                two differing Content-Length headers (5 and 6) and a
                         6-byte body "hello!", then closes (framing is
                         ambiguous, so the connection cannot be reused).
  /head-cl               HEAD: 200 with Content-Length: 1000 and no body.
                         Other methods: the same head plus 1000 bytes of 'x'.
                         Keep-alive.
  /no-content            204, no body, no Content-Length; keep-alive.
  /not-modified          304 with Content-Length: 50 and no body; keep-alive.
  /big-headers?n=BYTES   200 with one header X-Big whose value is BYTES bytes
                         of 'a' (default 16384); body "ok"; keep-alive.
  /many-headers?n=COUNT  200 with COUNT headers X-Header-<i>: value-<i>
                         (default 100); body "ok"; keep-alive.  &pad=BYTES
                         lengthens each value by BYTES bytes.
  /close-after?n=K       200 "ok" with no Connection header; once the
                         connection has served K requests (any path, this one
                         included; default 1) it is closed right after the
                         response, silently.  A client reusing it sees EOF (or
                         a reset) before any response byte.  Whatever it sent
                         on that connection is drained and not logged.
  /drop-next             200 "ok" keep-alive, but the next request that arrives
                         on the connection (any path) is read, logged and
                         answered by closing the connection without a byte:
                         a server closing an idle connection just as the
                         client reuses it.
  /raw?b=B64[&then=T]    sends the bytes given base64url-encoded in b, then
                         closes (then=close, default), stalls (then=stall) or
                         keeps serving (then=keep).
  /idle-close?ms=N       200 "ok" keep-alive; if no further request byte arrives
                         within N ms (default 50), the connection is closed.
  /slow-head?ms=N        waits N ms (default 500), then 200 "ok"; keep-alive.
  /status?code=N         status N (default 200) with body "status N\n" (no body
                         for 1xx, 204 and 304); keep-alive.  A 1xx code is sent
                         as is, with nothing after it.
  /echo                  200, Content-Type: application/json; body is the JSON
                         object {"method", "path", "version", "headers":
                         [[name, value], ...], "body_len", "conn", "seq"}
                         describing the request (same shape as /__log entries).
  /echo-body             200 whose body is the request body, verbatim.
  /big?n=BYTES           200 with Content-Length n and n bytes of 'x' (default
                         1048576), written in 64 KiB pieces; keep-alive.
  /redirect?code=N&to=L  status N (default 302) with "Location: L" (no Location
                         when `to` is absent) and body "redirecting\n";
                         keep-alive.  L is sent exactly as given (percent-decoded
                         once from the query), so relative and odd values work.
                         &pad=N: the body is N bytes of 'x' instead.
  /chain?n=K             302 to /chain?n=K-1 (relative Location); /chain?n=0
                         answers 200 "end of chain".
  /ping, /pong           302 to each other (a redirect loop).
  /coded?n=N&coding=C    200 whose body is N bytes of text (default 100000;
                         the same text as /plain?n=N) compressed with C: gzip
                         (default), gzip2 (two concatenated gzip members),
                         deflate (zlib-wrapped), raw (raw deflate, labelled
                         deflate), chain (deflate, then gzip: "deflate, gzip").
                         &ce=V overrides the Content-Encoding value; &corrupt=1
                         flips a byte in the middle of the compressed data;
                         &truncate=K drops its last K bytes (the HTTP framing
                         stays correct); &chunked=1 sends it chunked, in
                         chunks of &chunk=BYTES (default 1000).
  /plain?n=N             the uncompressed text of /coded?n=N.
  /bomb?mib=M            gzip of M MiB of zeros (default 1024), about 1/1000 of
                         that on the wire, Content-Length framed; keep-alive.
  /__log                 JSON {"connections": N, "requests": [entry, ...]};
                         entry = {"method", "path" (the request target as
                         received, query included), "version", "headers"
                         (list of [name, value] pairs, in order, as received),
                         "body_len" (decoded body length), "conn" (connection
                         id, from 1), "seq" (1-based index of the request on
                         its connection)}.  N counts accepted connections
                         since start or the last /__reset, except those whose
                         first request was /__log or /__reset.  Control
                         requests are not logged themselves.
  /__reset               clears the request list and the connection counter;
                         200 "reset".
  anything else          404 with body "not found\n"; keep-alive.

A malformed request gets 400 and the connection is closed; a request head
larger than 1 MiB gets 431 and the connection is closed.  Errors on one
connection (resets, broken pipes, parse errors) never affect the server.
"""

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

MAX_HEAD = 1 << 20
CHUNK = 64 * 1024

VERBOSE = False


def debug(msg):
    if VERBOSE:
        print(f"fault_server: {msg}", file=sys.stderr, flush=True)


class ClientGone(Exception):
    """The peer closed or reset the connection."""


class BadRequest(Exception):
    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status


class Request:
    __slots__ = ("method", "target", "version", "headers", "body", "path",
                 "query", "conn_id", "seq")

    def header(self, name):
        name = name.lower()
        for n, v in self.headers:
            if n.lower() == name:
                return v
        return None

    def header_values(self, name):
        name = name.lower()
        return [v for n, v in self.headers if n.lower() == name]

    def param(self, name, default):
        values = self.query.get(name)
        if not values:
            return default
        try:
            return int(values[0])
        except ValueError:
            return default

    def param_str(self, name, default=None):
        values = self.query.get(name)
        return values[0] if values else default

    def wants_close(self):
        tokens = set()
        for v in self.header_values("connection"):
            tokens.update(t.strip().lower() for t in v.split(","))
        if self.version == "HTTP/1.0":
            return "keep-alive" not in tokens
        return "close" in tokens

    def describe(self):
        return {
            "method": self.method,
            "path": self.target,
            "version": self.version,
            "headers": [[n, v] for n, v in self.headers],
            "body_len": len(self.body),
            "conn": self.conn_id,
            "seq": self.seq,
        }


class State:
    """Everything shared between connection threads, behind one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.connections = 0
        self.epoch = 0
        self.next_conn_id = 0

    def accepted(self):
        with self.lock:
            self.next_conn_id += 1
            self.connections += 1
            return self.next_conn_id, self.epoch

    def control_connection(self, epoch):
        # A connection opened only to query/reset the log does not count.
        with self.lock:
            if epoch == self.epoch and self.connections > 0:
                self.connections -= 1

    def record(self, req):
        self.record_entry(req.describe())

    def record_entry(self, entry):
        with self.lock:
            self.requests.append(entry)

    def snapshot(self):
        with self.lock:
            return {"connections": self.connections,
                    "requests": [dict(r) for r in self.requests]}

    def reset(self):
        with self.lock:
            self.requests = []
            self.connections = 0
            self.epoch += 1


class Connection:
    def __init__(self, sock, state, conn_id, epoch):
        self.sock = sock
        self.state = state
        self.conn_id = conn_id
        self.epoch = epoch
        self.buf = b""
        self.served = 0
        self.closed = False

    # ----------------------------------------------------------------- I/O

    def recv_more(self):
        try:
            data = self.sock.recv(CHUNK)
        except OSError as e:
            raise ClientGone(str(e))
        if not data:
            raise ClientGone("eof")
        self.buf += data

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("latin-1")
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ClientGone(str(e))

    def read_exact(self, n):
        while len(self.buf) < n:
            self.recv_more()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_line(self, limit=64 * 1024):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            if len(self.buf) > limit:
                raise BadRequest(400, "line too long")
            self.recv_more()

    def graceful_close(self, drain_timeout=5.0):
        """FIN first, then drain until the peer closes, then close."""
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_WR)
            self.sock.settimeout(drain_timeout)
            deadline = time.monotonic() + drain_timeout
            while time.monotonic() < deadline:
                if not self.sock.recv(CHUNK):
                    break
        except OSError:
            pass
        finally:
            try:
                self.sock.close()
            except OSError:
                pass

    def reset_close(self):
        """Close with RST: SO_LINGER on with a zero timeout."""
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def stall(self):
        """Send nothing; keep the connection until the client closes it."""
        self.sock.settimeout(None)
        try:
            while self.sock.recv(CHUNK):
                pass
        except OSError:
            pass
        self.plain_close()

    def plain_close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass

    # ------------------------------------------------------------- parsing

    def read_head(self):
        """Returns the raw head (without CRLFCRLF) or None on a clean EOF
        before any byte of a new request."""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                head, self.buf = self.buf[:i], self.buf[i + 4:]
                return head
            if len(self.buf) > MAX_HEAD:
                raise BadRequest(431, "request head too large")
            try:
                self.recv_more()
            except ClientGone:
                if self.buf.strip(b"\r\n"):
                    debug(f"conn {self.conn_id}: EOF inside a request head")
                return None

    def parse_head(self, head):
        # Tolerate empty lines before the request line (RFC 9112 2.2).
        lines = head.lstrip(b"\r\n").split(b"\r\n")
        try:
            method, target, version = lines[0].decode("latin-1").split(" ")
        except ValueError:
            raise BadRequest(400, "bad request line")
        if not version.startswith("HTTP/1."):
            raise BadRequest(400, "bad version")
        headers = []
        for raw in lines[1:]:
            line = raw.decode("latin-1")
            if ":" not in line:
                raise BadRequest(400, "bad header line")
            name, value = line.split(":", 1)
            if not name or name != name.strip():
                raise BadRequest(400, "bad header name")
            headers.append((name, value.strip(" \t")))
        req = Request()
        req.method, req.target, req.version = method, target, version
        req.headers = headers
        split = urlsplit(target)
        req.path = split.path
        req.query = parse_qs(split.query, keep_blank_values=True)
        req.body = b""
        return req

    def read_body(self, req):
        te = ",".join(req.header_values("transfer-encoding")).lower()
        if te:
            if te.split(",")[-1].strip() != "chunked":
                raise BadRequest(400, "unsupported transfer-encoding")
            parts = []
            while True:
                line = self.read_line().decode("latin-1")
                size_text = line.split(";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise BadRequest(400, "bad chunk size")
                if size == 0:
                    break
                parts.append(self.read_exact(size))
                if self.read_exact(2) != b"\r\n":
                    raise BadRequest(400, "bad chunk terminator")
            while self.read_line():  # trailer section
                pass
            req.body = b"".join(parts)
            return
        lengths = req.header_values("content-length")
        if not lengths:
            return
        values = {v.strip() for v in ",".join(lengths).split(",")}
        if len(values) != 1:
            raise BadRequest(400, "conflicting content-length")
        try:
            n = int(values.pop())
        except ValueError:
            raise BadRequest(400, "bad content-length")
        if n < 0:
            raise BadRequest(400, "bad content-length")
        req.body = self.read_exact(n)

    def has_body(self, req):
        if req.header_values("transfer-encoding"):
            return True
        for v in req.header_values("content-length"):
            if v.strip() not in ("", "0"):
                return True
        return False

    # ------------------------------------------------------------ responses

    def respond(self, req, status, body=b"", headers=(), length=True,
                reason=None):
        """A complete response.  Returns True if the connection stays open."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        if reason is None:
            reason = reason_phrase(status)
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines.extend(f"{n}: {v}" for n, v in headers)
        if length:
            lines.append(f"Content-Length: {len(body)}")
        close = req.wants_close()
        if close:
            lines.append("Connection: close")
        out = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if req.method != "HEAD":
            out += body
        self.send(out)
        return not close

    # ------------------------------------------------------------ main loop

    def run(self):
        try:
            self.loop()
        except ClientGone as e:
            debug(f"conn {self.conn_id}: client gone ({e})")
        except Exception as e:  # never let one connection kill the server
            debug(f"conn {self.conn_id}: error {e!r}")
        finally:
            if not self.closed:
                self.plain_close()

    def loop(self):
        while not self.closed:
            try:
                head = self.read_head()
                if head is None:
                    self.plain_close()
                    return
                req = self.parse_head(head)
            except BadRequest as e:
                self.send(f"HTTP/1.1 {e.status} {reason_phrase(e.status)}\r\n"
                          f"Content-Length: 0\r\nConnection: close\r\n\r\n")
                self.graceful_close()
                return
            self.served += 1
            req.conn_id = self.conn_id
            req.seq = self.served

            control = req.path in ("/__log", "/__reset")
            if control and self.served == 1:
                self.state.control_connection(self.epoch)

            expect = (req.header("expect") or "").lower()
            if expect == "100-continue" and self.has_body(req):
                mode = req.param_str("expect", "send")
                if mode == "417":
                    if not control:
                        self.state.record(req)
                    self.send("HTTP/1.1 417 Expectation Failed\r\n"
                              "Content-Length: 0\r\nConnection: close\r\n\r\n")
                    self.graceful_close()
                    return
                if mode == "final":
                    entry = req.describe()
                    entry["after_bytes"] = 0
                    if not control:
                        self.state.record_entry(entry)
                    code = req.param("code", 401)
                    self.send(f"HTTP/1.1 {code} {reason_phrase(code)}\r\n"
                              "Content-Length: 0\r\n\r\n")
                    while True:
                        try:
                            data = self.sock.recv(CHUNK)
                        except OSError:
                            data = b""
                        if not data:
                            break
                        with self.state.lock:
                            entry["after_bytes"] += len(data)
                    self.plain_close()
                    return
                if mode != "none":
                    self.send("HTTP/1.1 100 Continue\r\n\r\n")
            try:
                self.read_body(req)
            except BadRequest as e:
                self.send(f"HTTP/1.1 {e.status} {reason_phrase(e.status)}\r\n"
                          f"Content-Length: 0\r\nConnection: close\r\n\r\n")
                self.graceful_close()
                return

            if not control:
                self.state.record(req)
            if getattr(self, "drop_next", False):
                # /drop-next armed this: the server "times out" the idle connection just as
                # this request arrives, closing without a byte of response.
                self.graceful_close()
                return
            handler = SCENARIOS.get(req.path, scenario_not_found)
            keep = handler(self, req)
            if not keep:
                self.graceful_close()
                return


def reason_phrase(status):
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


# ------------------------------------------------------------------ scenarios
# Each handler returns True to keep serving the connection, False to have it
# closed gracefully.  Handlers that close in another way set conn.closed.


def scenario_ok(c, req):
    return c.respond(req, 200, "hello", [("Content-Type", "text/plain")])


def scenario_truncated(c, req):
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
           "Content-Length: 100\r\n\r\n")
    if req.method != "HEAD":
        c.send(b"0123456789")
    return False


def scenario_truncated_chunked(c, req):
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
           "Transfer-Encoding: chunked\r\n\r\n")
    if req.method != "HEAD":
        c.send(b"5\r\nhello\r\n")
    return False


def scenario_reset(c, req):
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
           "Content-Length: 100\r\n\r\n0123456789")
    time.sleep(0.05)
    c.reset_close()
    return False


def scenario_garbage(c, req):
    c.send(b"SPAM\r\n\r\n")
    return False


def scenario_empty(c, req):
    return False


def scenario_raw(c, req):
    # The response bytes come from the test, base64url-encoded in ?b=, so any malformed
    # response can be scripted without a new scenario. ?then=close (default), stall, or keep.
    import base64
    data = base64.urlsafe_b64decode(req.param_str("b", "") + "==")
    c.send(data)
    then = req.param_str("then", "close")
    if then == "stall":
        scenario_stall(c, req)
        return False
    return then == "keep"


def scenario_stall(c, req):
    c.stall()
    return False


def scenario_stall_body(c, req):
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
           "Content-Length: 10\r\n\r\nabc")
    c.stall()
    return False


ONE_BYTE_BODY = (b"5;name=value\r\nhello\r\n"
                 b"6\r\n world\r\n"
                 b"0\r\nX-Trailer: yes\r\n\r\n")


def scenario_one_byte(c, req):
    close = req.wants_close()
    head = ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            "Transfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n")
    data = head.encode("latin-1")
    if req.method != "HEAD":
        data += ONE_BYTE_BODY
    try:
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    for i in range(len(data)):
        c.send(data[i:i + 1])
        time.sleep(0.001)
    return not close


def scenario_chunked(c, req):
    close = req.wants_close()
    head = ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            "Transfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n")
    data = head.encode("latin-1")
    if req.method != "HEAD":
        data += (b"5\r\nhello\r\n"
                 b"1;ext=1\r\n \r\n"
                 b"5\r\nworld\r\n"
                 b"0\r\nX-Trailer: yes\r\n\r\n")
    c.send(data)
    return not close


def scenario_close_delimited(c, req):
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
    if req.method != "HEAD":
        n = req.param("n", -1)
        if n < 0:
            c.send(b"close-delimited body")
        else:
            send_x(c, n)
    return False


def scenario_http10(c, req):
    c.send("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
    if req.method != "HEAD":
        c.send(b"http/1.0 body")
    return False


def scenario_continue(c, req):
    c.send("HTTP/1.1 100 Continue\r\n\r\n")
    c.send("HTTP/1.1 103 Early Hints\r\n"
           "Link: </style.css>; rel=preload; as=style\r\n\r\n")
    return c.respond(req, 200, "final", [("Content-Type", "text/plain")])


def scenario_dup_cl(c, req):
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
           "Content-Length: 5\r\nContent-Length: 6\r\n\r\n")
    if req.method != "HEAD":
        c.send(b"hello!")
    return False


def scenario_head_cl(c, req):
    close = req.wants_close()
    c.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
           "Content-Length: 1000\r\n"
           + ("Connection: close\r\n" if close else "") + "\r\n")
    if req.method != "HEAD":
        send_x(c, 1000)
    return not close


def scenario_no_content(c, req):
    return c.respond(req, 204, length=False)


def scenario_not_modified(c, req):
    return c.respond(req, 304, length=False,
                     headers=[("Content-Length", "50"), ("ETag", '"v1"')])


def scenario_big_headers(c, req):
    n = max(0, req.param("n", 16384))
    return c.respond(req, 200, "ok", [("X-Big", "a" * n)])


def scenario_many_headers(c, req):
    n = max(0, req.param("n", 100))
    pad = "p" * max(0, req.param("pad", 0))
    return c.respond(req, 200, "ok",
                     [(f"X-Header-{i}", f"value-{i}{pad}") for i in range(n)])


def scenario_close_after(c, req):
    k = max(1, req.param("n", 1))
    keep = c.respond(req, 200, "ok", [("Content-Type", "text/plain")])
    if c.served >= k:
        return False
    return keep


def scenario_drop_next(c, req):
    c.drop_next = True
    return c.respond(req, 200, "ok", [("Content-Type", "text/plain")])


def scenario_idle_close(c, req):
    ms = max(0, req.param("ms", 50))
    if not c.respond(req, 200, "ok", [("Content-Type", "text/plain")]):
        return False
    if c.buf:
        return True  # a pipelined request is already here
    c.sock.settimeout(ms / 1000.0)
    try:
        data = c.sock.recv(CHUNK)
    except socket.timeout:
        c.sock.settimeout(None)
        return False
    except OSError as e:
        raise ClientGone(str(e))
    c.sock.settimeout(None)
    if not data:
        raise ClientGone("eof")
    c.buf += data
    return True


def scenario_slow_head(c, req):
    ms = max(0, req.param("ms", 500))
    time.sleep(ms / 1000.0)
    return c.respond(req, 200, "ok", [("Content-Type", "text/plain")])


def scenario_status(c, req):
    code = req.param("code", 200)
    if not 100 <= code <= 999:
        code = 200
    if 100 <= code < 200:
        c.send(f"HTTP/1.1 {code} {reason_phrase(code)}\r\n\r\n")
        return True
    if code in (204, 304):
        return c.respond(req, code, length=False)
    return c.respond(req, code, f"status {code}\n",
                     [("Content-Type", "text/plain")])


def scenario_echo(c, req):
    body = json.dumps(req.describe()).encode("utf-8")
    return c.respond(req, 200, body, [("Content-Type", "application/json")])


def scenario_echo_body(c, req):
    return c.respond(req, 200, req.body,
                     [("Content-Type", "application/octet-stream")])


def send_x(c, n):
    piece = b"x" * CHUNK
    while n > 0:
        k = min(n, CHUNK)
        c.send(piece[:k])
        n -= k


def scenario_big(c, req):
    n = max(0, req.param("n", 1 << 20))
    close = req.wants_close()
    c.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
           f"Content-Length: {n}\r\n"
           + ("Connection: close\r\n" if close else "") + "\r\n")
    if req.method != "HEAD":
        send_x(c, n)
    return not close


def scenario_redirect(c, req):
    code = req.param("code", 302)
    headers = [("Content-Type", "text/plain")]
    to = req.param_str("to")
    if to is not None:
        headers.append(("Location", to))
    pad = req.param("pad", 0)
    if pad > 0:
        close = req.wants_close()
        c.send((f"HTTP/1.1 {code} {reason_phrase(code)}\r\n"
                + "".join(f"{n}: {v}\r\n" for n, v in headers)
                + f"Content-Length: {pad}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n").encode("latin-1"))
        try:
            send_x(c, pad)
        except ClientGone:
            return False
        return not close
    return c.respond(req, code, "redirecting\n", headers)


def scenario_chain(c, req):
    n = req.param("n", 0)
    if n <= 0:
        return c.respond(req, 200, "end of chain", [("Content-Type", "text/plain")])
    return c.respond(req, 302, "", [("Location", f"chain?n={n - 1}")])


def scenario_ping(c, req):
    other = "/pong" if req.path == "/ping" else "/ping"
    return c.respond(req, 302, "", [("Location", other)])


def coded_text(n):
    line = b"".join(b"%06d the quick brown fox jumps over the lazy dog %d\n" % (i, i * i % 977)
                    for i in range(2048))
    return (line * (n // len(line) + 1))[:n]


def compress(data, coding):
    import zlib
    if coding in ("gzip", "gzip2"):
        parts = [data] if coding == "gzip" else [data[:len(data) // 2], data[len(data) // 2:]]
        out = b""
        for part in parts:
            c = zlib.compressobj(6, zlib.DEFLATED, 16 + 15)
            out += c.compress(part) + c.flush()
        return out, "gzip"
    if coding == "deflate":
        return zlib.compress(data, 6), "deflate"
    if coding == "raw":
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush(), "deflate"
    if coding == "chain":
        inner, _ = compress(data, "deflate")
        outer, _ = compress(inner, "gzip")
        return outer, "deflate, gzip"
    raise ValueError(coding)


def scenario_coded(c, req):
    n = max(0, req.param("n", 100000))
    body, ce = compress(coded_text(n), req.param_str("coding", "gzip"))
    ce = req.param_str("ce", ce)
    if req.param("corrupt", 0):
        middle = len(body) // 2
        body = body[:middle] + bytes([body[middle] ^ 0x55]) + body[middle + 1:]
    truncate = req.param("truncate", 0)
    if truncate:
        body = body[:max(0, len(body) - truncate)]
    headers = [("Content-Type", "text/plain"), ("Content-Encoding", ce)]
    if req.param("chunked", 0):
        head = "HTTP/1.1 200 OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        c.send((head + "Transfer-Encoding: chunked\r\n\r\n").encode("latin-1"))
        size = max(1, req.param("chunk", 1000))
        for i in range(0, len(body), size):
            piece = body[i:i + size]
            c.send(b"%x\r\n" % len(piece) + piece + b"\r\n")
        c.send(b"0\r\n\r\n")
        return True
    return c.respond(req, 200, body, headers)


def scenario_plain(c, req):
    return c.respond(req, 200, coded_text(max(0, req.param("n", 100000))), [("Content-Type", "text/plain")])


BOMBS = {}
BOMB_LOCK = threading.Lock()


def bomb(mib):
    import zlib
    with BOMB_LOCK:
        if mib not in BOMBS:
            c = zlib.compressobj(9, zlib.DEFLATED, 16 + 15)
            zeros = bytes(1 << 20)
            parts = [c.compress(zeros) for _ in range(mib)]
            parts.append(c.flush())
            BOMBS[mib] = b"".join(parts)
        return BOMBS[mib]


def scenario_bomb(c, req):
    data = bomb(max(1, min(4096, req.param("mib", 1024))))
    return c.respond(req, 200, data, [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")])


def scenario_log(c, req):
    body = json.dumps(c.state.snapshot()).encode("utf-8")
    return c.respond(req, 200, body, [("Content-Type", "application/json")])


def scenario_reset_log(c, req):
    c.state.reset()
    return c.respond(req, 200, "reset", [("Content-Type", "text/plain")])


def scenario_not_found(c, req):
    return c.respond(req, 404, "not found\n", [("Content-Type", "text/plain")])


SCENARIOS = {
    "/ok": scenario_ok,
    "/truncated": scenario_truncated,
    "/truncated-chunked": scenario_truncated_chunked,
    "/reset": scenario_reset,
    "/garbage": scenario_garbage,
    "/empty": scenario_empty,
    "/stall": scenario_stall,
    "/stall-body": scenario_stall_body,
    "/one-byte": scenario_one_byte,
    "/chunked": scenario_chunked,
    "/close-delimited": scenario_close_delimited,
    "/http10": scenario_http10,
    "/continue": scenario_continue,
    "/dup-cl": scenario_dup_cl,
    "/head-cl": scenario_head_cl,
    "/no-content": scenario_no_content,
    "/not-modified": scenario_not_modified,
    "/big-headers": scenario_big_headers,
    "/many-headers": scenario_many_headers,
    "/close-after": scenario_close_after,
    "/drop-next": scenario_drop_next,
    "/raw": scenario_raw,
    "/idle-close": scenario_idle_close,
    "/slow-head": scenario_slow_head,
    "/status": scenario_status,
    "/echo": scenario_echo,
    "/echo-body": scenario_echo_body,
    "/big": scenario_big,
    "/redirect": scenario_redirect,
    "/chain": scenario_chain,
    "/ping": scenario_ping,
    "/coded": scenario_coded,
    "/plain": scenario_plain,
    "/bomb": scenario_bomb,
    "/pong": scenario_ping,
    "/__log": scenario_log,
    "/__reset": scenario_reset_log,
}


# ---------------------------------------------------------------- lifecycle


def start_watchdogs(lifetime, watch_parent):
    def expire():
        debug("lifetime over, exiting")
        os._exit(0)

    if lifetime > 0:
        t = threading.Timer(lifetime, expire)
        t.daemon = True
        t.start()

    if watch_parent:
        parent = os.getppid()

        def watch():
            while True:
                time.sleep(0.5)
                if os.getppid() != parent:
                    debug("parent went away, exiting")
                    os._exit(0)

        threading.Thread(target=watch, daemon=True).start()


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description="Salvo fault-injection server")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=600.0,
                    help="exit after this many seconds (0: never)")
    ap.add_argument("--no-parent-watch", action="store_true",
                    help="keep running if the parent process goes away")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    VERBOSE = args.verbose

    # A launcher may pass on blocked or ignored signals (e.g. when spawned
    # from a thread-pool thread); make SIGTERM/SIGHUP kill us as expected.
    # Done before any thread starts, as threads inherit the mask.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(512)
    port = listener.getsockname()[1]

    start_watchdogs(args.lifetime, not args.no_parent_watch)

    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()

    state = State()
    while True:
        try:
            sock, _ = listener.accept()
        except InterruptedError:
            continue
        except OSError as e:
            # e.g. EMFILE or ECONNABORTED: back off a little, keep serving.
            debug(f"accept failed: {e}")
            time.sleep(0.01)
            continue
        conn_id, epoch = state.accepted()
        conn = Connection(sock, state, conn_id, epoch)
        try:
            threading.Thread(target=conn.run, daemon=True).start()
        except RuntimeError:
            conn.plain_close()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
