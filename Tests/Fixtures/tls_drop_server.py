#!/usr/bin/env python3
"""A TLS server that closes connections without close_notify, for Salvo's tests.

Usage: tls_drop_server.py --cert PEM --key PEM [--lifetime 120]
Prints "PORT <n>" once listening on 127.0.0.1, then for each connection reads one request
head and answers by path, then drops the TCP connection without sending close_notify:

  /close-delimited   200 with no Content-Length (the body ends at the close)
  /length            200 with Content-Length: 5, body "hello" (complete before the close)
"""
import argparse
import os
import socket
import ssl
import sys
import threading
import time


def serve(conn):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        path = data.split(b" ", 2)[1].decode("latin-1")
        if path.startswith("/length"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthis body ends when the connection does")
    except (OSError, ssl.SSLError):
        pass
    finally:
        # No unwrap(): the TCP connection goes away without a close_notify alert.
        try:
            raw = socket.socket(fileno=conn.detach())
            raw.close()
        except OSError:
            pass


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
    listener.listen(16)
    listener.settimeout(0.5)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    parent = os.getppid()
    deadline = time.monotonic() + args.lifetime
    while time.monotonic() < deadline and os.getppid() == parent:
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            continue
        try:
            conn = context.wrap_socket(sock, server_side=True)
        except (OSError, ssl.SSLError):
            sock.close()
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
