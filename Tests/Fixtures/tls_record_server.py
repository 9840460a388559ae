#!/usr/bin/env python3
"""A TLS server for Salvo's tests: it tells what its first read of a request held, and
counts what came (requests by path, failed handshakes).

Usage: tls_record_server.py --cert PEM --key PEM [--lifetime 120]

Prints "PORT <n>" once listening on 127.0.0.1, then serves each connection in a thread
of its own: one request per connection, every answer with "Connection: close".

A read on a TLS socket returns the data of one TLS record at most, so the first read
of a connection shows how the client cut its request into records.

  /one-record          200 "one-record" when the first read held the whole request (head
                       and Content-Length body), else 400 "split"; "X-Head-Bytes" says how
                       long the request's head was (its blank line included). The rest of
                       the request is read before answering either way, so the answer is
                       never lost to a reset.
  /redirect?to=L       302 with "Location: L" (L percent-decoded once from the query).
  /count?path=P        200 whose body is how many requests for path P came so far.
  /failed-handshakes   200 whose body is how many TLS handshakes failed so far (a client
                       that did not trust the certificate, say). Handshakes run one at a
                       time, in the order connections arrived, so one that failed before
                       this request's connection was made is counted.

The server stops by itself after --lifetime seconds or when its parent goes away.
"""
import argparse
import os
import socket
import ssl
import sys
import threading
import time
from collections import Counter
from urllib.parse import parse_qs, urlsplit

# What came so far: requests by path, and handshakes that failed.
requests = Counter()
failed_handshakes = 0
lock = threading.Lock()


def content_length(head):
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def answer(conn, status, body, fields=b""):
    conn.sendall(b"HTTP/1.1 %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                 % (status, fields, len(body), body))


def serve(conn):
    try:
        first = conn.recv(65536)
        data = first
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return
            data += more
        head, rest = data.split(b"\r\n\r\n", 1)
        length = content_length(head)
        while len(rest) < length:
            more = conn.recv(65536)
            if not more:
                return
            rest += more
        target = urlsplit(head.split(b" ", 2)[1].decode("latin-1"))
        query = {k: v[0] for k, v in parse_qs(target.query).items()}
        path = target.path
        if path not in ("/count", "/failed-handshakes"):
            with lock:
                requests[path] += 1
        if path == "/redirect":
            answer(conn, b"302 Found", b"redirecting\n", b"Location: %s\r\n" % query.get("to", "/").encode("latin-1"))
        elif path == "/count":
            with lock:
                count = requests[query.get("path", "")]
            answer(conn, b"200 OK", b"%d" % count)
        elif path == "/failed-handshakes":
            with lock:
                count = failed_handshakes
            answer(conn, b"200 OK", b"%d" % count)
        elif path == "/one-record":
            whole = b"\r\n\r\n" in first and len(first.split(b"\r\n\r\n", 1)[1]) >= length
            fields = b"X-Head-Bytes: %d\r\n" % (len(head) + 4)
            if whole:
                answer(conn, b"200 OK", b"one-record", fields)
            else:
                answer(conn, b"400 Bad Request", b"split", fields)
        else:
            answer(conn, b"404 Not Found", b"no such path")
    except (OSError, ssl.SSLError, ValueError, IndexError):
        pass
    finally:
        conn.close()


def main():
    global failed_handshakes
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--lifetime", type=float, default=120)
    args = parser.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.5)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    parent = os.getppid()
    deadline = time.monotonic() + args.lifetime
    while time.monotonic() < deadline and os.getppid() == parent:
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            continue
        sock.settimeout(10)
        try:
            conn = context.wrap_socket(sock, server_side=True)
        except (OSError, ssl.SSLError):
            with lock:
                failed_handshakes += 1
            sock.close()
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
