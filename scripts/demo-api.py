#!/usr/bin/env python3
"""A small JSON API for Salvo's typed-layer demo and tests (Python standard library only).

Usage: demo-api.py [--host 127.0.0.1] [--port 0] [--lifetime 600]

Prints "PORT <n>" once listening, then serves HTTP/1.1 with keep-alive until killed, until
--lifetime seconds have passed, or until its parent goes away.

  GET  /users                 [{"id", "name", "email_address"}...]; ?name=X filters
  GET  /users/<id>            one user, or 404 {"error": "no user <id>"}
  POST /users                 201, the JSON body with an "id" added
  POST /login                 {"token": "t-<username>"} for any password "secret", else
                              401 {"error": "bad credentials"}
  ANY  /echo, /echo/<any>      {"method", "path", "query" (the raw query), "headers"
                              ([[name, value]...]), "body" (text, latin-1), "body_length"}
  GET  /wrapped               {"data": {"items": [users...], "count": n}}
  GET  /status/<code>         that status, body {"error": "status <code>"}
  GET  /text                  text/plain "plain text"
  GET  /empty                 204
  GET  /slow?ms=N             waits N ms, then {"slept": N}
  POST /form                  a urlencoded body parsed: {"fields": [[name, value]...]}
  POST /multipart             a multipart/form-data body parsed by the email package:
                              {"parts": [{"name", "filename", "content_type", "size",
                              "sha256", "text" (first 200 bytes, latin-1)}...]}
  PUT  /upload                reads the body in pieces: {"size", "sha256"}
  GET  /download?size=N       N bytes (byte i is i % 251), Content-Length set;
                              &truncate=K closes after K bytes; &key=K names it
  GET  /download-progress?key=K
                              {"written": bytes the latest /download of key K (default
                              none) has written so far}
  GET  /jsonl?n=N&ms=M        N JSON Lines {"index": i} every M ms (chunked);
                              &truncate=1 ends on half a line, then closes
  GET  /sse?n=N&ms=M          N Server-Sent Events (id i, data {"index": i}); a
                              Last-Event-ID header resumes after it; &drop=K closes
                              the stream after K events the first time; &single=1
                              sends one data line per event
  GET  /refuse-stream         503 with a JSON reason, then a body that never ends
  GET  /flaky?key=K&fail=N    503 + Retry-After for the first N requests of K, then
                              {"attempts", "idempotency_key"}; &status=S answers S
                              instead of 503, &after=A sends Retry-After: A (0 unless
                              given; &after=none sends none)
  GET  /concurrent?key=K&ms=M holds each request M ms, counting those of K at once;
                              ?stats=1&key=K answers {"now", "most", "total"}
  GET  /protected?token=T     200 for "Authorization: Bearer T", else 401
  GET  /pages?total=N&per_page=M&page=K
                              [{"id"}...] of items 1...N, M a page, with a Link field
                              (prev, next, last, first) as GitHub writes it; the other
                              query items are kept in the links. &links=relative writes
                              them relative; &loop=1 links the last page back to page 1;
                              &offsite=URL links it to URL; &ms=M waits M ms
                              before answering any page after the first
  GET  /cursor?after=C&limit=M {"items": [{"id"}...], "next_cursor"} over items 1...10,
                              null after the last; &stuck=1 gives the same cursor forever
"""
import argparse
import email.parser
import email.policy
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

USERS = [
    {"id": 1, "name": "Ada Lovelace", "email_address": "ada@example.test"},
    {"id": 2, "name": "Alan Turing", "email_address": "alan@example.test"},
    {"id": 3, "name": "Grace Hopper", "email_address": "grace@example.test"},
]

# Bytes the latest /download of each key has written (a client that reads slowly holds the
# server back); keyed, so that tests running at once do not read each other's downloads.
DOWNLOAD_PROGRESS = {}
# /concurrent: requests in progress now and the most at once, per key.
CONCURRENT = {}
# /flaky: requests seen per key, to fail the first few of each.
FLAKY_COUNTS = {}
FLAKY_LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "salvo-api/1"

    def log_message(self, *args):
        pass

    def body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(length) if length else b""

    def send(self, status, payload, content_type="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if status != 204 and self.command != "HEAD":
            self.wfile.write(data)

    def handle_any(self):
        parts = urlsplit(self.path)
        path = parts.path
        query = parse_qs(parts.query)
        if path == "/upload":
            return self.upload()
        body = self.body()
        if path == "/echo" or path.startswith("/echo/"):
            return self.send(200, {
                "method": self.command, "path": path, "query": parts.query,
                "headers": [[k, v] for k, v in self.headers.items()],
                "body": body.decode("latin-1"), "body_length": len(body),
            })
        if path == "/users" and self.command == "GET":
            users = USERS
            if "name" in query:
                users = [u for u in USERS if query["name"][0].lower() in u["name"].lower()]
            return self.send(200, users)
        if path == "/users" and self.command == "POST":
            try:
                user = json.loads(body or b"null")
                user = dict(user, id=len(USERS) + 1)
            except (ValueError, TypeError):
                return self.send(400, {"error": "not a JSON object"})
            return self.send(201, user)
        if path.startswith("/users/"):
            key = path[len("/users/"):]
            for user in USERS:
                if str(user["id"]) == key:
                    return self.send(200, user)
            return self.send(404, {"error": "no user %s" % key})
        if path == "/login":
            try:
                credentials = json.loads(body or b"{}")
            except ValueError:
                credentials = {}
            if credentials.get("password") == "secret":
                return self.send(200, {"token": "t-%s" % credentials.get("username", "")})
            return self.send(401, {"error": "bad credentials"})
        if path == "/wrapped":
            return self.send(200, {"data": {"items": USERS, "count": len(USERS)}})
        if path.startswith("/status/"):
            code = int(path[len("/status/"):])
            return self.send(code, {"error": "status %d" % code})
        if path == "/text":
            return self.send(200, b"plain text", "text/plain; charset=utf-8")
        if path == "/empty":
            return self.send(204, b"")
        if path == "/slow":
            ms = int(query.get("ms", ["200"])[0])
            time.sleep(ms / 1000)
            return self.send(200, {"slept": ms})
        if path == "/form":
            fields = parse_qsl(body.decode("utf-8"), keep_blank_values=True)
            return self.send(200, {"fields": [[k, v] for k, v in fields],
                                   "content_type": self.headers.get("Content-Type", "")})
        if path == "/multipart":
            return self.multipart(body)
        if path == "/download":
            return self.download(query)
        if path == "/download-progress":
            return self.send(200, {"written": DOWNLOAD_PROGRESS.get(query.get("key", [""])[0], 0)})
        if path == "/jsonl":
            return self.jsonl(query)
        if path == "/sse":
            return self.sse(query)
        if path == "/refuse-stream":
            return self.refuse_stream()
        if path == "/flaky":
            return self.flaky(query)
        if path == "/concurrent":
            return self.concurrent(query)
        if path == "/protected":
            # 200 for the bearer token the query names, 401 for any other.
            expected = "Bearer " + query.get("token", [""])[0]
            if self.headers.get("Authorization") != expected:
                return self.send(401, {"error": "unauthorized"})
            return self.send(200, {"ok": True})
        if path == "/pages":
            return self.pages(parse_qsl(parts.query, keep_blank_values=True))
        if path == "/cursor":
            return self.cursor(query)
        return self.send(404, {"error": "no route %s %s" % (self.command, path)})

    def pages(self, pairs):
        """Items 1...total, per_page a page, with GitHub's Link field: each link is this
        request's URL with another page number, absolute (on the Host asked for) unless
        links=relative."""
        options = dict(pairs)
        total = int(options.get("total", "10"))
        per_page = max(1, int(options.get("per_page", "3")))
        page = int(options.get("page", "1"))
        if page > 1:
            time.sleep(int(options.get("ms", "0")) / 1000)
        last = max(1, -(-total // per_page))
        items = [{"id": i} for i in range((page - 1) * per_page + 1, min(page * per_page, total) + 1)]
        prefix = "/pages" if options.get("links") == "relative" else "http://%s/pages" % self.headers.get("Host", "")

        def url(number):
            others = [(k, v) for k, v in pairs if k != "page"]
            return prefix + "?" + urlencode(others + [("page", str(number))])

        links = []
        if page > 1:
            links.append('<%s>; rel="prev"' % url(page - 1))
        if page < last:
            links.append('<%s>; rel="next"' % url(page + 1))
        elif "offsite" in options:
            links.append('<%s>; rel="next"' % options["offsite"])
        elif options.get("loop") == "1":
            links.append('<%s>; rel="next"' % url(1))
        links.append('<%s>; rel="last"' % url(last))
        links.append('<%s>; rel="first"' % url(1))
        data = json.dumps(items).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Link", ", ".join(links))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # A client that gave up while the page waited (a cancelled walk).
            self.close_connection = True

    def cursor(self, query):
        """Items 1...10 after the cursor "c<id>", limit a page, and the cursor of the last one."""
        after = int(query.get("after", ["c0"])[0][1:] or 0)
        limit = int(query.get("limit", ["4"])[0])
        items = [{"id": i} for i in range(after + 1, min(after + limit, 10) + 1)]
        following = "c%d" % items[-1]["id"] if items and items[-1]["id"] < 10 else None
        if "stuck" in query:
            following = "c0"
        return self.send(200, {"items": items, "next_cursor": following})

    def multipart(self, body):
        head = ("Content-Type: %s\r\n\r\n" % self.headers.get("Content-Type", "")).encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        if not message.is_multipart():
            return self.send(400, {"error": "not multipart"})
        result = []
        for part in message.iter_parts():
            payload = part.get_payload(decode=True) or b""
            result.append({
                "name": part.get_param("name", header="content-disposition"),
                "filename": part.get_filename(),
                "content_type": part.get("Content-Type"),
                "size": len(payload),
                "sha256": hashlib.sha256(payload).hexdigest(),
                "text": payload[:200].decode("latin-1"),
            })
        return self.send(200, {"parts": result})

    def upload(self):
        digest = hashlib.sha256()
        size = 0
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            while True:
                length = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if length == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                remaining = length
                while remaining:
                    piece = self.rfile.read(min(remaining, 1 << 16))
                    if not piece:
                        return
                    digest.update(piece)
                    size += len(piece)
                    remaining -= len(piece)
                self.rfile.readline()
        else:
            remaining = int(self.headers.get("Content-Length", "0") or 0)
            while remaining:
                piece = self.rfile.read(min(remaining, 1 << 16))
                if not piece:
                    return
                digest.update(piece)
                size += len(piece)
                remaining -= len(piece)
        return self.send(200, {"size": size, "sha256": digest.hexdigest()})

    def download(self, query):
        size = int(query.get("size", ["0"])[0])
        truncate = int(query.get("truncate", ["-1"])[0])
        pattern = bytes(i % 251 for i in range(251 * 64))
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        sent = 0
        key = query.get("key", [""])[0]
        DOWNLOAD_PROGRESS[key] = 0
        limit = size if truncate < 0 else min(truncate, size)
        try:
            while sent < limit:
                offset = sent % 251
                piece = pattern[offset:offset + min(limit - sent, len(pattern) - 251)]
                self.wfile.write(piece)
                sent += len(piece)
                DOWNLOAD_PROGRESS[key] = sent
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        if truncate >= 0:
            self.wfile.flush()
            self.close_connection = True

    def chunked_start(self, content_type):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def jsonl(self, query):
        count = int(query.get("n", ["3"])[0])
        delay = int(query.get("ms", ["0"])[0]) / 1000
        self.chunked_start("application/x-ndjson")
        try:
            for index in range(count):
                if index and delay:
                    time.sleep(delay)
                self.chunk(json.dumps({"index": index}).encode() + b"\n")
            if "truncate" in query:
                self.chunk(b'{"index": ')
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def sse(self, query):
        count = int(query.get("n", ["3"])[0])
        delay = int(query.get("ms", ["0"])[0]) / 1000
        drop = int(query.get("drop", ["0"])[0])
        last = self.headers.get("Last-Event-ID")
        start = int(last) + 1 if last else 0
        self.chunked_start("text/event-stream")
        try:
            self.chunk(b": a comment, then the retry time\nretry: 50\n\n")
            for index in range(start, count):
                if delay:
                    time.sleep(delay)
                second = b"" if "single" in query else b"data: second line\n"
                self.chunk(b"id: %d\nevent: tick\ndata: {\"index\": %d}\n%s\n" % (index, index, second))
                if drop and last is None and index + 1 == drop:
                    self.close_connection = True
                    return
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def flaky(self, query):
        """`status` (503 by default) with Retry-After: `after` (none for "none") for the
        first `fail` requests of each `key`, then 200 with the number of attempts and the
        Idempotency-Key seen."""
        key = query.get("key", [""])[0]
        fail = int(query.get("fail", ["1"])[0])
        status = int(query.get("status", ["503"])[0])
        after = query.get("after", ["0"])[0]
        with FLAKY_LOCK:
            FLAKY_COUNTS[key] = FLAKY_COUNTS.get(key, 0) + 1
            seen = FLAKY_COUNTS[key]
        if seen <= fail:
            body = json.dumps({"error": "busy", "attempt": seen}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if after != "none":
                self.send_header("Retry-After", after)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        return self.send(200, {"attempts": seen, "idempotency_key": self.headers.get("Idempotency-Key")})

    def concurrent(self, query):
        """Holds each request `ms` milliseconds, counting how many of one `key` run at once;
        `?stats=1` answers the most seen at once and the total for that key."""
        key = query.get("key", [""])[0]
        if "stats" in query:
            with FLAKY_LOCK:
                now, most, total = CONCURRENT.get(key, (0, 0, 0))
            return self.send(200, {"now": now, "most": most, "total": total})
        with FLAKY_LOCK:
            now, most, total = CONCURRENT.get(key, (0, 0, 0))
            CONCURRENT[key] = (now + 1, max(most, now + 1), total + 1)
        try:
            time.sleep(int(query.get("ms", ["100"])[0]) / 1000)
        finally:
            with FLAKY_LOCK:
                now, most, total = CONCURRENT[key]
                CONCURRENT[key] = (now - 1, most, total)
        return self.send(200, {"ok": True})

    def refuse_stream(self):
        """A 503 whose body says why, then never ends (a blank line every 100 ms, 30 s at most)."""
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self.chunk(b'{"error": "busy"}')
            for _ in range(300):
                time.sleep(0.1)
                self.chunk(b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_PURGE = handle_any


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--lifetime", type=float, default=600)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    parent = os.getppid()

    def watch():
        deadline = time.monotonic() + args.lifetime
        while time.monotonic() < deadline and os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
