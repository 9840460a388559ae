#!/usr/bin/env python3
"""A scripted HTTP proxy on a loopback port, for the proxy tests.

Usage: scripted_proxy.py LOGFILE [LIFETIME]. Prints "PORT n" once listening, then serves until
killed, or LIFETIME seconds (default 300) have passed.
Every request head it receives is appended to LOGFILE (heads separated by a line "----").

CONNECT host:port — what it does depends on the host's first label:
  refuse     403 Forbidden (with a small body)
  auth       407 with Proxy-Authenticate unless Proxy-Authorization is Basic user:secret,
             then a tunnel as below
  close      closes the connection without answering
  half       sends half a status line, then closes
  garbage    answers with something that is not HTTP
  extra      200, and bytes after it before the client has said anything
  silent     never answers (the connection stays open until the client leaves)
  interim    a 100 Continue head, then 200 and a tunnel
  dropped    200 Connection established, then closes at once (whatever the client sends)
  (other)    200 Connection established, then a tunnel to 127.0.0.1:port

Any other method (a request in absolute form): 200, keep-alive, and the body is the request
head exactly as received, so a test sees what the client sent to its proxy.
"""
import base64
import os
import socket
import sys
import threading

LOG = sys.argv[1]
LOCK = threading.Lock()
EXPECTED = "Basic " + base64.b64encode(b"user:secret").decode()


def log(head):
    with LOCK:
        with open(LOG, "ab") as f:
            f.write(head + b"----\n")


def read_head(conn, buffered):
    while b"\r\n\r\n" not in buffered:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        buffered += chunk
    end = buffered.index(b"\r\n\r\n") + 4
    return buffered[:end], buffered[end:]


def pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    for s in (sink,):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def tunnel(conn, port, rest):
    try:
        upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
        upstream.settimeout(None)
    except OSError:
        conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        return
    if rest:
        upstream.sendall(rest)
    back = threading.Thread(target=pipe, args=(upstream, conn), daemon=True)
    back.start()
    pipe(conn, upstream)
    back.join(30)
    upstream.close()


def handle(conn):
    buffered = b""
    try:
        while True:
            head, buffered = read_head(conn, buffered)
            if head is None:
                return
            log(head)
            lines = head.decode("latin-1").split("\r\n")
            method, target = lines[0].split(" ")[:2]
            fields = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    fields[name.strip().lower()] = value.strip()
            if method != "CONNECT":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(head) + head)
                continue
            host, _, port = target.rpartition(":")
            label = host.split(".")[0]
            if label == "refuse":
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden")
                continue
            if label == "auth" and fields.get("proxy-authorization") != EXPECTED:
                conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                             b"Proxy-Authenticate: Basic realm=\"scripted\"\r\nContent-Length: 0\r\n\r\n")
                continue
            if label == "close":
                return
            if label == "half":
                conn.sendall(b"HTTP/1.1 200 Conn")
                return
            if label == "garbage":
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
                return
            if label == "extra":
                conn.sendall(b"HTTP/1.1 200 OK\r\n\r\nEXTRA")
                conn.recv(1)
                return
            if label == "silent":
                while conn.recv(65536):
                    pass
                return
            if label == "dropped":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                return
            if label == "interim":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            tunnel(conn, int(port), buffered)
            return
    except OSError:
        pass
    finally:
        conn.close()


def main():
    lifetime = float(sys.argv[2]) if len(sys.argv) > 2 else 300
    threading.Timer(lifetime, os._exit, [0]).start()
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print("PORT %d" % server.getsockname()[1], flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
