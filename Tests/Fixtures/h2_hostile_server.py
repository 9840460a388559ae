#!/usr/bin/env python3
"""A scripted HTTP/2 server (cleartext, prior knowledge) that misbehaves on purpose.

    python3 h2_hostile_server.py [--lifetime 600]

Listens on 127.0.0.1 with one port per scenario and prints one line per scenario,
"<scenario> <port>", then serves until it is killed, its lifetime ends or its parent
goes away. Frames are written by hand (RFC 9113) and heads in HPACK's simplest forms
(RFC 7541: static-table indexes and literals without Huffman coding), so that every
byte the client meets is the one the scenario means.

Scenarios, each acting when a request's HEADERS frame arrives (``ok`` answers normally,
and so does every scenario for what it does not cover):

  ok                    200, "ok"
  settings-flood        10,000 SETTINGS frames before anything else
  ping-flood            10,000 PING frames
  empty-data-flood      a 200 head, then 100,000 empty DATA frames that never end the stream
  hpack-bomb            the first request's head: one 3,000-byte field put in the dynamic
                        table, then referenced 400 times (1.2 MB decoded from ~3.5 KB);
                        later requests on the connection are answered normally
  endless-continuation  a HEADERS frame without END_HEADERS, then CONTINUATION frames forever
  window-zero           SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE: a request body
                        can never be sent
  pseudo-in-response    a response head that carries a request pseudo-field (:path)
  uppercase-name        a response head with an uppercase field name
  goaway-storm          1,000 GOAWAY frames (last stream 0) on every connection, then a close
  goaway-once           on the server's first connection GOAWAY (last stream 0); later
                        connections are answered normally
  refused-once          the first request the server sees is refused (RST_STREAM
                        REFUSED_STREAM); later ones are answered normally
  reset-mid-body        a 200 head announcing 100,000 bytes, 1,000 of them, then RST_STREAM
                        INTERNAL_ERROR
  rst-flood             RST_STREAM CANCEL on the request's stream, then 10,000 more on it
  silent                reads everything, answers nothing
  ping-silent           answers requests, never a PING (nor anything else unasked)
  redirect-then-goaway  on the server's first connection: a 302 to /next and, in the same
                        write, GOAWAY naming that stream as the last; later connections answer
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4

SCENARIOS = [
    "ok", "settings-flood", "ping-flood", "empty-data-flood", "hpack-bomb", "endless-continuation",
    "window-zero", "pseudo-in-response", "uppercase-name", "goaway-storm", "goaway-once", "refused-once",
    "reset-mid-body", "rst-flood", "silent", "ping-silent", "redirect-then-goaway",
]


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream & 0x7FFFFFFF) + payload


def integer(value, prefix, mask=0):
    limit = (1 << prefix) - 1
    if value < limit:
        return bytes([mask | value])
    out = [mask | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def literal(name, value, indexing=False):
    """A literal field with a new name: without indexing, or added to the dynamic table."""
    name, value = name.encode(), value.encode()
    return bytes([0x40 if indexing else 0x00]) + integer(len(name), 7) + name + integer(len(value), 7) + value


STATUS_200 = bytes([0x88])


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.connections = {name: 0 for name in SCENARIOS}
        self.requests = {name: 0 for name in SCENARIOS}

    def count(self, table, scenario):
        with self.lock:
            table[scenario] += 1
            return table[scenario]


def read_exactly(conn, count):
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def answer_ok(conn, stream):
    conn.sendall(frame(HEADERS, END_HEADERS, stream, STATUS_200 + literal("content-length", "2"))
                 + frame(DATA, END_STREAM, stream, b"ok"))


def serve(conn, scenario, state):
    connection_number = state.count(state.connections, scenario)
    try:
        if read_exactly(conn, len(PREFACE)) != PREFACE:
            return
        settings = b""
        if scenario == "window-zero":
            settings = struct.pack(">HI", 4, 0)   # SETTINGS_INITIAL_WINDOW_SIZE 0
        conn.sendall(frame(SETTINGS, 0, 0, settings))
        if scenario == "settings-flood":
            conn.sendall(b"".join(frame(SETTINGS, 0, 0, struct.pack(">HI", 3, 100)) for _ in range(10_000)))
        if scenario == "ping-flood":
            conn.sendall(b"".join(frame(PING, 0, 0, b"12345678") for _ in range(10_000)))
        streams_seen = 0
        while True:
            header = read_exactly(conn, 9)
            length = struct.unpack(">I", b"\0" + header[:3])[0]
            kind, flags = header[3], header[4]
            stream = struct.unpack(">I", header[5:9])[0] & 0x7FFFFFFF
            payload = read_exactly(conn, length) if length else b""
            if kind == SETTINGS and not flags & ACK:
                conn.sendall(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK and scenario != "ping-silent":
                conn.sendall(frame(PING, ACK, 0, payload))
            elif kind == HEADERS:
                streams_seen += 1
                request_number = state.count(state.requests, scenario)
                act(conn, scenario, stream, streams_seen, connection_number, request_number)
    except (EOFError, ConnectionError, OSError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def act(conn, scenario, stream, streams_seen, connection_number, request_number):
    if scenario == "empty-data-flood":
        conn.sendall(frame(HEADERS, END_HEADERS, stream, STATUS_200))
        empty = frame(DATA, 0, stream)
        for _ in range(100):
            conn.sendall(empty * 1000)
    elif scenario == "hpack-bomb" and streams_seen == 1:
        block = STATUS_200 + literal("x-bomb", "b" * 3000, indexing=True) + bytes([0xBE]) * 400
        conn.sendall(frame(HEADERS, END_HEADERS | END_STREAM, stream, block))
    elif scenario == "endless-continuation":
        conn.sendall(frame(HEADERS, 0, stream, STATUS_200))
        piece = frame(CONTINUATION, 0, stream, literal("x-more", "c" * 100))
        for _ in range(1000):
            conn.sendall(piece * 10)
    elif scenario == "window-zero":
        pass   # the body can never come; nor does an answer
    elif scenario == "pseudo-in-response":
        conn.sendall(frame(HEADERS, END_HEADERS | END_STREAM, stream, STATUS_200 + literal(":path", "/x")))
    elif scenario == "uppercase-name":
        conn.sendall(frame(HEADERS, END_HEADERS | END_STREAM, stream, STATUS_200 + literal("X-Upper", "1")))
    elif scenario == "goaway-storm":
        conn.sendall(frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)) * 1000)
        conn.shutdown(socket.SHUT_WR)
    elif scenario == "goaway-once" and connection_number == 1:
        conn.sendall(frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)))
    elif scenario == "refused-once" and request_number == 1:
        conn.sendall(frame(RST_STREAM, 0, stream, struct.pack(">I", 7)))
    elif scenario == "reset-mid-body":
        conn.sendall(frame(HEADERS, END_HEADERS, stream, STATUS_200 + literal("content-length", "100000"))
                     + frame(DATA, 0, stream, b"x" * 1000) + frame(RST_STREAM, 0, stream, struct.pack(">I", 2)))
    elif scenario == "rst-flood":
        conn.sendall(frame(RST_STREAM, 0, stream, struct.pack(">I", 8)) * 10_001)
    elif scenario == "silent":
        pass
    elif scenario == "redirect-then-goaway" and connection_number == 1:
        conn.sendall(frame(HEADERS, END_HEADERS | END_STREAM, stream,
                           bytes([0x48]) + b"\x03302" + literal("location", "/next"))
                     + frame(GOAWAY, 0, 0, struct.pack(">II", stream, 0)))
    else:
        answer_ok(conn, stream)


def listen(scenario, state):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)

    def accept():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn, scenario, state), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lifetime", type=float, default=600.0)
    args = parser.parse_args()
    state = State()
    for scenario in SCENARIOS:
        print(f"{scenario} {listen(scenario, state)}", flush=True)
    parent = os.getppid()
    deadline = time.monotonic() + args.lifetime
    while time.monotonic() < deadline and os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    main()
