#!/usr/bin/env python3
"""Side-by-side HTTP client comparison: Salvo vs wrk, h2load (HTTP/2) and async-http-client.

    python3 Benchmarks/compare.py                  # full matrix, ~10-15 min
    python3 Benchmarks/compare.py --quick          # smoke test, ~30 s
    python3 Benchmarks/compare.py --scenarios small-64,1m-4 --clients wrk,salvo
    python3 Benchmarks/compare.py --scenarios json-64 \
        --clients wrk,salvo-typed,salvo-raw-json,ahc-json   # the typed layer
    python3 Benchmarks/compare.py --scenarios small-64,https-64 \
        --clients wrk,salvo,salvo-callbacks --baseline /tmp/old/salvo   # two builds, interleaved
    python3 Benchmarks/compare.py --scenarios h2c-4x16,h2s-1x64 \
        --clients h2load,salvo,salvo-async,ahc                         # HTTP/2

What it does (see Benchmarks/README.md for the reasoning):
  * starts a private nginx (temp dir, generated config and self-signed cert,
    1 worker, pinned to --server-cpu) on free 127.0.0.1 ports, and stops it at
    the end, also on Ctrl-C or an error;
  * runs every client pinned to --client-cpu, one at a time, interleaved:
    per scenario, R rounds, client order reversed on odd rounds;
  * per run records the client's own requests/s and its CPU time (user+sys of
    the whole process, all threads, from os.wait4's rusage), giving client
    CPU-seconds per 100k requests;
  * prints a Markdown report on stdout (progress goes to stderr) and writes
    every run as one JSON line to --out.

Standard library only. Linux only (taskset, /proc).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
TICK = os.sysconf("SC_CLK_TCK")

# name -> (scheme, path, connections)
SCENARIOS = {
    "small-16": ("http", "/small", 16),
    "small-64": ("http", "/small", 64),
    "small-256": ("http", "/small", 256),
    "https-64": ("https", "/small", 64),
    "1m-4": ("http", "/1m", 4),
    # A ~1 KB JSON document that the JSON clients decode into a struct (Profile in
    # typed-load/TypedLoad.swift and ahc-load); the other clients just read it.
    "json-64": ("http", "/user.json", 64),
    # HTTP/2: h2c (cleartext, prior knowledge) and h2s (TLS, ALPN h2) listeners of their own;
    # streams per connection in STREAMS. wrk speaks no HTTP/2: h2load is the yardstick there,
    # and async-http-client (HTTP/2 over TLS only) the API path's peer.
    "h2c-4x16": ("h2c", "/small", 4),
    "h2s-1x64": ("h2s", "/small", 1),
}
STREAMS = {"h2c-4x16": 16, "h2s-1x64": 64}
H2_SCENARIOS = set(STREAMS)
JSON_SCENARIOS = {"json-64"}
TYPED_LOAD_MODES = {  # client name -> typed-load --mode
    "salvo-typed": "typed",
    "salvo-typed-mw1": "typed-mw1",  # the typed client with one pass-through middleware
    "salvo-typed-mw5": "typed-mw5",  # the typed client with five pass-through middleware
    "salvo-raw-json": "raw",
}
JSON_CLIENTS = {*TYPED_LOAD_MODES, "ahc-json"}  # decode JSON: run on JSON scenarios only
SALVO_APIS = {  # client name -> extra salvo bench arguments
    "salvo": [],
    "salvo-async": ["--api", "async"],
    "salvo-async-loop": ["--api", "async-loop"],
    "salvo-callbacks": ["--api", "callbacks"],
    # The fast path: a request prepared once, each response lent to a handler.
    "salvo-prepared-async": ["--api", "prepared-async"],
    "salvo-prepared-async-loop": ["--api", "prepared-async-loop"],
    "salvo-prepared-callbacks": ["--api", "prepared-callbacks"],
}
ALL_CLIENTS = ["wrk", "wrk-lua", "salvo-scripted", *SALVO_APIS, "ahc", *TYPED_LOAD_MODES, "ahc-json", "h2load"]


def runs_on(client, scenario):
    """Whether `client` takes part in `scenario`."""
    if scenario in H2_SCENARIOS:
        if client == "ahc":
            return SCENARIOS[scenario][0] == "h2s"
        return client == "h2load" or bool(salvo_api(client))
    if client == "h2load":
        return False
    if client in JSON_CLIENTS or typed_mode(client):
        return scenario in JSON_SCENARIOS
    return True


def baseline_client(scenario):
    """The client the ratios of `scenario` are taken against."""
    return "h2load" if scenario in H2_SCENARIOS else "wrk"
SMALL_BODY = "hello, world\n"
ONE_MIB = 1 << 20
# The JSON scenario's document: a profile with an address, tags and five projects (~1 KB).
USER_JSON = json.dumps({
    "id": 1815, "name": "Ada Lovelace", "email": "ada@example.test", "active": True, "score": 98.6,
    "tags": ["mathematics", "poetry", "engines", "notes", "analysis"],
    "address": {"street": "12 St James's Square", "city": "London", "postcode": "SW1Y 4JH", "country": "GB"},
    "projects": [{"id": 100 + i, "title": f"Notes on the analytical engine, part {i}", "stars": 1200 + 37 * i,
                  "updated": f"2026-11-{10 + i:02d}T09:30:00Z", "archived": i % 2 == 0} for i in range(5)],
}, indent=1)
OVERRUN_GRACE = 30  # seconds a client may run past its duration before it is killed
SLOW_OVERHEAD = 1.0  # seconds of process life beyond the client's own run that get flagged


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def raise_nofile():
    """preexec_fn: lift the soft open-files limit to the hard limit (c=256 and up)."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_cpu_seconds(pid):
    """utime+stime of a process (all its threads) from /proc/PID/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of stat(5)


def child_pids(pid):
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    kids += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return kids


# ---------------------------------------------------------------- nginx

class Nginx:
    """A private nginx in its own temp dir; never touches the system service."""

    def __init__(self, binary, cpu):
        self.binary, self.cpu = binary, cpu
        self.dir = tempfile.mkdtemp(prefix="salvo-compare-nginx-")
        self.http_port = free_port()
        ports = set()
        while len(ports) < 4:
            ports.add(free_port())
        self.http_port, self.https_port, self.h2c_port, self.h2s_port = sorted(ports)
        self.proc = None

    def url(self, scheme, path):
        port = {"http": self.http_port, "https": self.https_port, "h2c": self.h2c_port, "h2s": self.h2s_port}[scheme]
        return f"{'http' if scheme in ('http', 'h2c') else 'https'}://127.0.0.1:{port}{path}"

    def start(self):
        d = self.dir
        www = os.path.join(d, "www")
        os.makedirs(www)
        # nginx workers drop to an unprivileged user when started as root: let them read www/
        os.chmod(d, 0o755)
        os.chmod(www, 0o755)
        os.makedirs(os.path.join(d, "tmp"))
        with open(os.path.join(www, "1m"), "wb") as f:
            f.write(os.urandom(ONE_MIB))
        os.chmod(os.path.join(www, "1m"), 0o644)
        with open(os.path.join(www, "user.json"), "w") as f:
            f.write(USER_JSON)
        os.chmod(os.path.join(www, "user.json"), 0o644)
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "7",
             "-keyout", key, "-out", cert, "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        conf = os.path.join(d, "nginx.conf")
        tmp = os.path.join(d, "tmp")
        with open(conf, "w") as f:
            f.write(f"""# generated by Benchmarks/compare.py
worker_processes 1;
daemon off;
master_process on;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
worker_rlimit_nofile 100000;
events {{
    worker_connections 50000;
    use epoll;
}}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    default_type application/octet-stream;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{self.http_port} backlog=4096;
        listen 127.0.0.1:{self.https_port} ssl backlog=4096;
        listen 127.0.0.1:{self.h2c_port} http2 backlog=4096;
        listen 127.0.0.1:{self.h2s_port} ssl http2 backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        root {www};
        location = /small {{
            default_type text/plain;
            return 200 "{SMALL_BODY.strip()}\\n";
        }}
        location = /user.json {{
            default_type application/json;
        }}
        location / {{ }}
    }}
}}
""")
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(self.cpu), self.binary, "-c", conf, "-p", d],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(d, "stderr.log"), "w"), preexec_fn=raise_nofile)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.proc.returncode}: " + self.errors())
            if self._answers():
                return
            time.sleep(0.05)
        raise RuntimeError("nginx did not come up within 10 s: " + self.errors())

    def _answers(self):
        for port in (self.http_port, self.https_port, self.h2c_port, self.h2s_port):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            except OSError:
                return False
        return True

    def errors(self):
        out = []
        for name in ("stderr.log", "error.log"):
            try:
                with open(os.path.join(self.dir, name)) as f:
                    out.append(f.read()[-2000:])
            except OSError:
                pass
        return " ".join(out).strip()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def workers(self):
        return child_pids(self.proc.pid) if self.alive() else []

    def cpu_seconds(self, workers):
        return sum(proc_cpu_seconds(w) or 0.0 for w in workers)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            workers = self.workers()
            self.proc.terminate()  # SIGTERM: nginx fast shutdown, master stops its workers
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
                for w in workers:
                    try:
                        os.kill(w, signal.SIGKILL)
                    except OSError:
                        pass
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------- clients

BASELINE = "@base"  # suffix of a salvo client run with the --baseline binary


def salvo_api(client):
    """The salvo client a name stands for (the baseline's too), or None."""
    base = client[:-len(BASELINE)] if client.endswith(BASELINE) else client
    return base if base in SALVO_APIS else None


def typed_mode(client):
    """The typed-load mode a name stands for (the baseline's too), or None."""
    base = client[:-len(BASELINE)] if client.endswith(BASELINE) else client
    return TYPED_LOAD_MODES.get(base)


def client_command(client, url, conns, duration, paths, streams=None):
    if client == "h2load":
        return [paths["h2load"], "-t1", f"-c{conns}", f"-m{streams or 1}", f"-D{duration}", url]
    http2 = ["--http2", "--streams", str(streams)] if streams else []
    if client == "wrk":
        return [paths["wrk"], "-t1", f"-c{conns}", f"-d{duration}s", url]
    if client == "wrk-lua":
        # wrk with a Lua script that builds each request's path and checks each response.
        return [paths["wrk"], "-t1", f"-c{conns}", f"-d{duration}s", "-s", os.path.join(BENCH_DIR, "wrk-scripted.lua"), url]
    if client == "salvo-scripted":
        # wrk-scripted.lua's workload as a Workload (Benchmarks/scripted-load).
        insecure = ["-k"] if url.startswith("https") else []
        return [paths["scripted-load"], url, "-t1", f"-c{conns}", f"-d{duration}s", "--json", *insecure]
    if salvo_api(client):
        # The test nginx has a self-signed certificate; wrk and ahc-load do not verify either.
        insecure = ["-k"] if url.startswith("https") else []
        binary = paths["salvo" + BASELINE] if client.endswith(BASELINE) else paths["salvo"]
        return [binary, "bench", "-t1", f"-c{conns}", f"-d{duration}s", "--json",
                *insecure, *http2, *SALVO_APIS[salvo_api(client)], url]
    if client in ("ahc", "ahc-json"):
        # Over HTTP/2 async-http-client multiplexes its callers on one connection: as many
        # callers as the scenario has streams.
        return [paths["ahc"], "--url", url, "--connections", str(conns * (streams or 1)),
                "--duration", str(duration), "--threads", "1"] + (["--decode-json"] if client == "ahc-json" else [])
    if typed_mode(client):
        binary = paths["typed-load" + BASELINE] if client.endswith(BASELINE) else paths["typed-load"]
        return [binary, "--url", url, "--connections", str(conns),
                "--duration", str(duration), "--mode", typed_mode(client)]
    raise ValueError(client)


WRK_UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def parse_wrk(out):
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m|h), ([\d.]+)([KMGT]?B) read", out)
    if not m:
        raise ValueError("no 'N requests in' line")
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(3)]
    r = {"requests": int(m.group(1)), "seconds": float(m.group(2)) * scale,
         "bytes": int(float(m.group(4)) * WRK_UNITS[m.group(5)])}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    errors = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(x) for x in m.groups())
    r["errors"] = errors
    return r


def last_json_object(out):
    try:
        return json.loads(out)
    except ValueError:
        pass
    for line in reversed(out.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise ValueError("no JSON object in the output")


def parse_salvo(out):
    s = last_json_object(out)["summary"]
    errors = s.get("errors", 0)
    if isinstance(errors, dict):
        errors = sum(errors.values())
    return {"requests": int(s["requests"]), "seconds": float(s["duration_seconds"]),
            "bytes": int(s.get("bytes_read", 0)), "errors": int(errors)}


def parse_ahc(out):
    j = last_json_object(out)
    return {"requests": int(j["requests"]), "seconds": float(j["seconds"]),
            "bytes": int(j["bytes"]), "errors": int(j["errors"])}


def parse_h2load(out):
    m = re.search(r"finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", out)
    n = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", out)
    if not m or not n:
        raise ValueError("no 'finished in' or 'requests:' line")
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    b = re.search(r"traffic: [\d.]+[KMG]?B \((\d+)\) total", out)
    return {"requests": int(n.group(4)), "seconds": float(m.group(1)) * scale, "rps": float(m.group(3)),
            "bytes": int(b.group(1)) if b else 0, "errors": int(n.group(5)) + int(n.group(6)) + int(n.group(7))}


def parse_output(client, out):
    if client == "h2load":
        return parse_h2load(out)
    if client in ("wrk", "wrk-lua"):
        return parse_wrk(out)
    if salvo_api(client) or client == "salvo-scripted":
        return parse_salvo(out)
    return parse_ahc(out)


def run_client(cmd, duration, nginx):
    """Run one pinned client; returns (exit code or None if killed, stdout, stderr, rusage, wall, nginx cpu)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        workers = nginx.workers()
        n0 = nginx.cpu_seconds(workers)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                preexec_fn=raise_nofile)
        killed = False
        try:
            deadline = t0 + duration + OVERRUN_GRACE
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    break
                if time.monotonic() > deadline and not killed:
                    proc.kill()
                    killed = True
                    deadline = float("inf")
                time.sleep(0.02)
        except BaseException:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise
        wall = time.monotonic() - t0
        nginx_cpu = nginx.cpu_seconds(workers) - n0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, tell Popen
        out.seek(0)
        err.seek(0)
        return (None if killed else proc.returncode,
                out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                usage, wall, nginx_cpu)


def measure(client, scenario, rnd, args, nginx, paths):
    scheme, path, conns = SCENARIOS[scenario]
    url = nginx.url(scheme, path)
    cmd = ["taskset", "-c", str(args.client_cpu)] + client_command(client, url, conns, args.duration, paths,
                                                                   STREAMS.get(scenario))
    code, out, err, usage, wall, nginx_cpu = run_client(cmd, args.duration, nginx)
    cpu = usage.ru_utime + usage.ru_stime
    r = {"ts": round(time.time(), 3), "scenario": scenario, "client": client, "round": rnd + 1,
         "connections": conns, "duration": args.duration, "url": url, "cmd": shlex.join(cmd),
         "exit": code, "wall_seconds": round(wall, 3), "cpu_user": usage.ru_utime,
         "cpu_sys": usage.ru_stime, "cpu_seconds": round(cpu, 4), "max_rss_kb": usage.ru_maxrss,
         "client_cores": round(cpu / wall, 3) if wall else None,
         "nginx_cores": round(nginx_cpu / wall, 3) if wall else None}
    if code is None:
        r["failure"] = f"killed after overrunning {args.duration}+{OVERRUN_GRACE} s"
    elif code != 0:
        r["failure"] = f"exit {code}: " + (err.strip() or out.strip())[-300:]
    else:
        try:
            r.update(parse_output(client, out))
        except (ValueError, KeyError, TypeError) as e:
            r["failure"] = f"unparsable output ({e}): " + (err.strip() or out.strip())[-300:]
    if "failure" not in r:
        if r["requests"] <= 0:
            r["failure"] = "no successful requests: " + (err.strip() or out.strip())[-300:]
        else:
            r.setdefault("rps", r["requests"] / r["seconds"])
            r["cpu_per_100k"] = cpu / r["requests"] * 1e5
            r["mb_per_s"] = r["bytes"] / r["seconds"] / 1e6
            # time the process lived beyond its own measured window (start-up + shutdown)
            r["overhead_seconds"] = round(wall - r["seconds"], 3)
    return r


# ---------------------------------------------------------------- report

def fmt_int(x):
    return f"{x:,.0f}"


def fmt_ratio(x):
    return f"{x:.2f}x"


def machine_lines(args, paths):
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / (1 << 20):.0f} GiB"
    except (OSError, ValueError, IndexError):
        mem = "?"
    u = os.uname()

    def version(cmd):
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10)
            return p.stdout.strip().splitlines()[0] if p.stdout.strip() else "?"
        except (OSError, subprocess.SubprocessError):
            return "?"

    commit = version(["git", "-C", REPO, "describe", "--always", "--dirty", "--abbrev=10"])
    lines = [
        f"- machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {model}, {mem} RAM",
        f"- kernel: {u.sysname} {u.release} ({u.machine})",
        f"- nginx: {version([args.nginx, '-v']).replace('nginx version: ', '')}, 1 worker on CPU {args.server_cpu}; "
        f"clients on CPU {args.client_cpu} (`taskset`), 1 thread each, loopback only",
        f"- wrk: {version([paths['wrk'], '-v']).split(' Copyright')[0] if paths.get('wrk') else 'not run'}",
        f"- salvo: {paths.get('salvo') or 'not run'} (repo at {commit})",
        f"- ahc: {paths.get('ahc') or 'not run'} (Benchmarks/ahc-load, async-http-client async/await API)",
        f"- typed-load: {paths.get('typed-load') or 'not run'} (Benchmarks/typed-load: Salvo's typed client, or its raw "
        f"API + JSONDecoder)",
        f"- {args.rounds} round(s) x {args.duration} s per client and scenario, interleaved "
        f"(order reversed on odd rounds); medians over rounds",
    ]
    if "salvo" + BASELINE in paths:
        lines.insert(5, f"- baseline salvo (the clients named CLIENT{BASELINE}): {paths['salvo' + BASELINE]}")
    return lines


def report(results, scenarios, clients, skipped, args):
    lines = []
    for sc in scenarios:
        scheme, path, conns = SCENARIOS[sc]
        rows = [r for r in results if r["scenario"] == sc]
        if not rows:
            continue
        big = path == "/1m"
        peer = baseline_client(sc)
        lines.append(f"### {sc}: {scheme} {path}, {conns} connections"
                     + (f" × {STREAMS[sc]} streams" if sc in STREAMS else ""))
        lines.append("")
        head = ["client", "req/s median (min–max)", f"vs {peer}", "CPU-s / 100k req", f"CPU vs {peer}",
                "client cores", "nginx cores"]
        if big:
            head.append("MB/s")
        head += ["errors", "runs ok"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join("---" for _ in head) + "|")

        def stats(client):
            ok = [r for r in rows if r["client"] == client and "failure" not in r]
            if not ok:
                return None
            med = statistics.median
            return {"rps": med([r["rps"] for r in ok]), "min": min(r["rps"] for r in ok),
                    "max": max(r["rps"] for r in ok), "cpu": med([r["cpu_per_100k"] for r in ok]),
                    "ccores": med([r["client_cores"] for r in ok]),
                    "ncores": med([r["nginx_cores"] for r in ok]),
                    "mbs": med([r["mb_per_s"] for r in ok]),
                    "errors": sum(r["errors"] for r in ok), "ok": len(ok)}

        base = stats(peer)
        for client in clients:
            runs = [r for r in rows if r["client"] == client]
            if not runs:
                continue
            s = stats(client)
            if s is None:
                cells = [client, "n/a", "", "", "", "", ""] + ([""] if big else []) + ["", f"0/{len(runs)}"]
            else:
                cells = [client, f"{fmt_int(s['rps'])} ({fmt_int(s['min'])}–{fmt_int(s['max'])})",
                         fmt_ratio(s["rps"] / base["rps"]) if base else "",
                         f"{s['cpu']:.2f}",
                         fmt_ratio(s["cpu"] / base["cpu"]) if base else "",
                         f"{s['ccores']:.2f}", f"{s['ncores']:.2f}"]
                if big:
                    cells.append(fmt_int(s["mbs"]))
                cells += [str(s["errors"]), f"{s['ok']}/{len(runs)}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        failures = {}
        for r in rows:
            if "failure" in r:
                failures.setdefault(r["client"], []).append(r["failure"])
        for r in rows:
            if r.get("overhead_seconds", 0) > SLOW_OVERHEAD:
                lines.append(f"- {r['client']} round {r['round']}: the process lived {r['overhead_seconds']:.1f} s "
                             f"longer than its own measured run (slow start-up or exit); its client/nginx cores "
                             f"are diluted, req/s and CPU per request are not")
        for client, whys in failures.items():
            runs = sum(1 for r in rows if r["client"] == client)
            lines.append(f"- {client}: {len(whys)} of {runs} runs failed (not counted) — "
                         f"{whys[0].splitlines()[0][:200]}")
        if lines[-1] != "":
            lines.append("")
    if skipped:
        lines.append("Skipped clients:")
        for client, why in skipped.items():
            lines.append(f"- {client}: {why}")
        lines.append("")
    lines.append("Columns: req/s from each client's own report (median of the rounds, min–max across them); "
                 "\"vs wrk\" = median req/s ÷ wrk's; CPU-s / 100k req = client user+sys CPU time of the whole "
                 "process (os.wait4 rusage) ÷ requests × 100,000, lower is better; \"CPU vs wrk\" = that ÷ wrk's; "
                 "client/nginx cores = CPU time ÷ wall time of the run (1.00 = one core saturated)"
                 + ("; MB/s = bytes read ÷ seconds ÷ 10^6 (wrk counts headers too)" if "1m-4" in scenarios else "")
                 + ".")
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def build_ahc(scratch):
    log("building Benchmarks/ahc-load (release); a cold build takes several minutes (5-8 on 2 cores)...")
    cmd = ["swift", "build", "-c", "release", "--package-path", os.path.join(BENCH_DIR, "ahc-load"),
           "--scratch-path", scratch]
    log("  " + shlex.join(cmd))
    return subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr).returncode == 0


def resolve_clients(args):
    """Returns (paths, skipped): binaries per client kind and a note per skipped client."""
    paths, skipped = {}, {}
    wanted = args.clients
    for tool, package in (("h2load", "nghttp2-client"), ("wrk", "wrk")):
        if tool in wanted or (tool == "wrk" and "wrk-lua" in wanted):
            found = shutil.which(tool)
            if found:
                paths[tool] = found
            else:
                skipped[tool] = f"{tool} not found on PATH (apt-get install {package})"
    if any(c in SALVO_APIS for c in wanted):
        salvo = os.path.abspath(os.path.join(REPO, args.salvo)) if not os.path.isabs(args.salvo) else args.salvo
        if os.access(salvo, os.X_OK):
            paths["salvo"] = salvo
        else:
            for c in wanted:
                if c in SALVO_APIS:
                    skipped[c] = f"{salvo} missing; run `swift build -c release --product salvo`"
    if args.baseline:
        baseline = os.path.abspath(args.baseline)
        if os.access(baseline, os.X_OK):
            paths["salvo" + BASELINE] = baseline
        else:
            for c in wanted:
                if c.endswith(BASELINE):
                    skipped[c] = f"{baseline} missing"
    if "salvo-scripted" in wanted:
        scripted = os.path.join(os.path.dirname(paths.get("salvo") or os.path.join(REPO, args.salvo)), "scripted-load")
        if os.access(scripted, os.X_OK):
            paths["scripted-load"] = scripted
        else:
            skipped["salvo-scripted"] = f"{scripted} missing; run `swift build -c release --product scripted-load`"
    if any(c in TYPED_LOAD_MODES for c in wanted):
        typed = os.path.join(os.path.dirname(paths.get("salvo") or os.path.join(REPO, args.salvo)), "typed-load")
        if os.access(typed, os.X_OK):
            paths["typed-load"] = typed
        else:
            for c in wanted:
                if c in TYPED_LOAD_MODES:
                    skipped[c] = f"{typed} missing; run `swift build -c release --product typed-load`"
    if args.baseline and any(c.endswith(BASELINE) and typed_mode(c) for c in wanted):
        # The baseline's typed-load sits next to its salvo binary.
        typed = os.path.join(os.path.dirname(os.path.abspath(args.baseline)), "typed-load")
        if os.access(typed, os.X_OK):
            paths["typed-load" + BASELINE] = typed
        else:
            for c in wanted:
                if c.endswith(BASELINE) and typed_mode(c):
                    skipped[c] = f"{typed} missing: build typed-load next to the baseline salvo"
    if "ahc" in wanted or "ahc-json" in wanted:
        scratch = os.path.join(REPO, ".build-ahc")
        ahc = args.ahc or os.path.join(scratch, "release", "ahc-load")
        if args.build_ahc or (not os.access(ahc, os.X_OK) and not args.no_build and not args.ahc):
            if not build_ahc(scratch):
                skipped["ahc"] = "building Benchmarks/ahc-load failed (see the log above)"
        if "ahc" not in skipped:
            if os.access(ahc, os.X_OK):
                paths["ahc"] = ahc
            else:
                skipped["ahc"] = (f"{ahc} missing; build it with `swift build -c release --package-path "
                                  f"Benchmarks/ahc-load --scratch-path .build-ahc` or drop --no-build")
        if "ahc" in skipped and "ahc-json" in wanted:
            skipped["ahc-json"] = skipped["ahc"]
        if "ahc" not in wanted:
            skipped.pop("ahc", None)
    return paths, skipped


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Scenarios: " + ", ".join(SCENARIOS) + ". Clients: " + ", ".join(ALL_CLIENTS) + ".")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per scenario (default 3)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated (default: all)")
    ap.add_argument("--clients", default=",".join(ALL_CLIENTS), help="comma-separated, in run order (default: all)")
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 round, 2 s, small-64 only (overrides the above)")
    ap.add_argument("--salvo", default=".build/release/salvo", help="salvo binary (relative to the repo root)")
    ap.add_argument("--baseline", help="another salvo binary (a build before a change): each salvo client also "
                                       "runs with it, as CLIENT@base, interleaved in the same rounds")
    ap.add_argument("--ahc", help="ahc-load binary (default: <repo>/.build-ahc/release/ahc-load)")
    ap.add_argument("--build-ahc", action="store_true", help="(re)build Benchmarks/ahc-load first")
    ap.add_argument("--no-build", action="store_true", help="never build ahc-load; skip it if missing")
    ap.add_argument("--out", default="/tmp/salvo-compare.jsonl", help="raw per-run JSON lines (overwritten)")
    ap.add_argument("--nginx", default="/usr/sbin/nginx", help="nginx binary")
    ap.add_argument("--server-cpu", type=int, default=0, help="CPU for nginx (default 0)")
    ap.add_argument("--client-cpu", type=int, default=1, help="CPU for the clients (default 1)")
    ap.add_argument("--pause", type=float, default=0.5, help="seconds of rest between runs")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.duration, args.scenarios = 1, 2, "small-64"
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    args.clients = [c for c in args.clients.split(",") if c]
    if args.baseline:
        # Each salvo client runs right after itself with the baseline build.
        args.clients = [name for c in args.clients
                        for name in ([c, c + BASELINE] if c in SALVO_APIS or c in TYPED_LOAD_MODES else [c])]
    for s in args.scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s!r} (have: {', '.join(SCENARIOS)})")
    for c in args.clients:
        if c not in ALL_CLIENTS and not (args.baseline and (salvo_api(c) or typed_mode(c))):
            ap.error(f"unknown client {c!r} (have: {', '.join(ALL_CLIENTS)})")
    if args.rounds < 1 or args.duration < 1:
        ap.error("--rounds and --duration must be >= 1")
    return args


def main(argv):
    args = parse_args(argv)
    for tool in ("taskset", "openssl"):
        if not shutil.which(tool):
            sys.exit(f"compare.py: {tool} not found on PATH")
    if not os.access(args.nginx, os.X_OK):
        sys.exit(f"compare.py: {args.nginx} not found (apt-get install nginx, or pass --nginx)")
    cpus = os.sched_getaffinity(0)
    if args.server_cpu not in cpus or args.client_cpu not in cpus:
        sys.exit(f"compare.py: CPUs {args.server_cpu} and {args.client_cpu} must be available (have {sorted(cpus)})")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    paths, skipped = resolve_clients(args)
    clients = [c for c in args.clients if c not in skipped]
    for client, why in skipped.items():
        log(f"skipping {client}: {why}")
    if not clients:
        sys.exit("compare.py: no client to run")

    print("## HTTP client comparison")
    print()
    print("```")
    print("$ " + shlex.join(["python3", os.path.relpath(os.path.abspath(__file__), REPO)] + list(argv)))
    print("```")
    print()
    for line in machine_lines(args, paths):
        print(line)
    print()
    sys.stdout.flush()

    total_runs = sum(args.rounds for sc in args.scenarios for c in clients if runs_on(c, sc))
    log(f"{total_runs} runs of {args.duration} s (~{total_runs * (args.duration + args.pause + 0.5) / 60:.1f} min)")

    nginx = Nginx(args.nginx, args.server_cpu)
    results = []
    try:
        nginx.start()
        log(f"nginx pid {nginx.proc.pid}: http :{nginx.http_port}, https :{nginx.https_port}, dir {nginx.dir}")
        with open(args.out, "w") as out:
            n = 0
            for sc in args.scenarios:
                for rnd in range(args.rounds):
                    order = clients if rnd % 2 == 0 else clients[::-1]
                    for client in order:
                        if not runs_on(client, sc):
                            continue  # a JSON client decodes the JSON document only; HTTP/2 has its own
                        if not nginx.alive():
                            raise RuntimeError("nginx died: " + nginx.errors())
                        n += 1
                        r = measure(client, sc, rnd, args, nginx, paths)
                        results.append(r)
                        out.write(json.dumps(r) + "\n")
                        out.flush()
                        if "failure" in r:
                            msg = "n/a: " + r["failure"].splitlines()[0][:160]
                        else:
                            msg = (f"{r['rps']:>10,.0f} req/s  cpu/100k {r['cpu_per_100k']:6.2f} s  "
                                   f"client {r['client_cores']:.2f} nginx {r['nginx_cores']:.2f} cores  "
                                   f"err {r['errors']}" + (f"  {r['mb_per_s']:,.0f} MB/s" if sc == "1m-4" else "")
                                   + (f"  SLOW START/EXIT: lived {r['overhead_seconds']:.1f} s longer than its run"
                                      if r["overhead_seconds"] > SLOW_OVERHEAD else ""))
                        log(f"[{n:>3}/{total_runs}] {sc:9} r{rnd + 1} {client:16} {msg}")
                        time.sleep(args.pause)
    except (KeyboardInterrupt, Interrupted) as e:
        log(f"interrupted ({str(e) or 'Ctrl-C'}); stopping nginx")
        nginx.stop()
        if results:
            print(report(results, args.scenarios, clients, skipped, args), flush=True)
        sys.exit(130)
    finally:
        nginx.stop()

    print(report(results, args.scenarios, clients, skipped, args))
    print()
    print(f"Raw runs: {args.out}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
