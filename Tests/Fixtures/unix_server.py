#!/usr/bin/env python3
"""An HTTP/1.1 server on a Unix domain socket, for the tests of --unix-socket.

Usage: unix_server.py PATH. Prints "READY 1" once listening, then serves until killed:
  GET /ok     200 "hello unix", keep-alive, with "X-Connection: n" (the n-th connection
              this server accepted, so a test can see a connection reused) and
              "X-Host: <the Host field>".
Anything else: 404.
"""
import os
import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler

COUNT = [0]
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        with LOCK:
            COUNT[0] += 1
            self.connection_number = COUNT[0]

    def address_string(self):
        return "unix"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/ok":
            body = b"not here"
            self.send_response(404)
        else:
            body = b"hello unix"
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Connection", str(self.connection_number))
        self.send_header("X-Host", self.headers.get("Host", ""))
        self.end_headers()
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    path = sys.argv[1]
    if os.path.exists(path):
        os.unlink(path)
    server = Server(path, Handler)
    print("READY 1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
