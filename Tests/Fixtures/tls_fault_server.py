#!/usr/bin/env python3
"""A scripted TLS server that misbehaves at chosen points, for Salvo's tests.

Usage: tls_fault_server.py --cert PEM --key PEM [--lifetime 120]

Prints "PORT <n>" once listening on 127.0.0.1, then serves each connection in a thread
of its own: it reads a request head, acts by path, and (where the path keeps the
connection) reads the next request.  "Reset" means a TCP RST (SO_LINGER on with a zero
timeout), never a close_notify; "drop" means a TCP close without close_notify.

  /length              200, Content-Length: 5, body "hello", then drop.
  /close-delimited     200 with no Content-Length (the body ends at the close), then drop.
  /ok                  200, Content-Length: 2, body "ok"; keep-alive.
  /idle-reset?ms=N     200 "ok", keep-alive; if no further request byte arrives within N ms
                       (default 100), reset the idle connection.
  /early?code=C        answers C (default 413) with Content-Length and "Connection: close"
                       at once, without reading the request body; once the client's kernel has
                       acknowledged the answer, waits ?wait=MS (default 0) and resets the
                       connection, while the client is likely still sending.
  /reset-body?after=N  reads N bytes of the request body (default 65536), then resets without
                       answering.
  /records?n=N&size=S  200 with a body of N*S bytes (default 1312 x 200) sent as N records of S
                       bytes each, corked so that they leave in full segments; keep-alive.  A
                       client that reads records ahead holds the last ones inside its TLS
                       library with nothing left in the socket.

The server stops by itself after --lifetime seconds or when its parent goes away.
"""
import argparse
import fcntl
import os
import socket
import ssl
import struct
import sys
import termios
import threading
import time
from urllib.parse import parse_qs, urlsplit


def reset(conn):
    """Drops the TCP connection with a RST: no close_notify, no FIN."""
    try:
        raw = socket.socket(fileno=conn.detach())
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.close()
    except OSError:
        pass


def drop(conn):
    """Closes the TCP connection without a close_notify alert."""
    try:
        raw = socket.socket(fileno=conn.detach())
        raw.close()
    except OSError:
        pass


def wait_until_acknowledged(conn, limit=2.0):
    """Waits until the peer acknowledged every byte sent: a reset would drop what is unsent
    (the kernel may hold a small write back to coalesce it), and the test is about what the
    client does with an answer that did reach it."""
    deadline = time.monotonic() + limit
    buffer = bytearray(4)
    while time.monotonic() < deadline:
        fcntl.ioctl(conn.fileno(), termios.TIOCOUTQ, buffer)
        if struct.unpack("i", buffer)[0] == 0:
            return
        time.sleep(0.0005)


def read_head(conn, pending):
    """Reads up to the end of a request head; returns (head, rest) or (None, b"")."""
    data = pending
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest


def serve(conn):
    pending = b""
    try:
        while True:
            head, pending = read_head(conn, pending)
            if head is None:
                drop(conn)
                return
            target = head.split(b" ", 2)[1].decode("latin-1")
            parts = urlsplit(target)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            path = parts.path
            if path == "/length":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
                drop(conn)
                return
            if path == "/close-delimited":
                conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthis body ends when the connection does")
                drop(conn)
                return
            if path == "/early":
                code = int(query.get("code", "413"))
                body = b"too large\n"
                conn.sendall(b"HTTP/1.1 %d Early\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                             % (code, len(body), body))
                wait_until_acknowledged(conn)
                time.sleep(int(query.get("wait", "0")) / 1000)
                reset(conn)
                return
            if path == "/reset-body":
                wanted = int(query.get("after", "65536"))
                got = len(pending)
                while got < wanted:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += len(chunk)
                reset(conn)
                return
            if path == "/records":
                count, size = int(query.get("n", "1312")), int(query.get("size", "200"))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (count * size))
                record = bytes((i * 7) & 0xFF for i in range(size))
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                for _ in range(count):
                    conn.sendall(record)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
                continue
            # /ok and /idle-reset: a keep-alive answer (request bodies are not expected here).
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            if path == "/idle-reset" and not pending:
                conn.settimeout(int(query.get("ms", "100")) / 1000)
                try:
                    pending = conn.recv(65536)
                except (socket.timeout, ssl.SSLError):
                    pending = b""
                conn.settimeout(None)
                if not pending:
                    reset(conn)
                    return
    except (OSError, ssl.SSLError, ValueError, IndexError):
        reset(conn)


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
        conn.settimeout(None)
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
