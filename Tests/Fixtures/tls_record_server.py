#!/usr/bin/env python3
"""A TLS server that tells what its first read of a request held, for Salvo's tests.

Usage: tls_record_server.py --cert PEM --key PEM [--lifetime 120]

Prints "PORT <n>" once listening on 127.0.0.1, then serves each connection in a thread
of its own: one request per connection, every answer with "Connection: close".

A read on a TLS socket returns the data of one TLS record at most, so the first read
of a connection shows how the client cut its request into records.

  /one-record   200 "one-record" when the first read held the whole request (head and
                Content-Length body), else 400 "split"; "X-Head-Bytes" says how long the
                request's head was (its blank line included). The rest of the request is
                read before answering either way, so the answer is never lost to a reset.

The server stops by itself after --lifetime seconds or when its parent goes away.
"""
import argparse
import os
import socket
import ssl
import sys
import threading
import time


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
        path = head.split(b" ", 2)[1].split(b"?", 1)[0]
        if path == b"/one-record":
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
            sock.close()
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
