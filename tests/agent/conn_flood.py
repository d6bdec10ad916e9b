"""A hostile neighbour's connections: `conns` TCP connections to one port, held open idle or trickling a
byte a second, each opened again as soon as the server closes it, from source addresses 127.0.0.2,
127.0.0.3, ... (all of 127/8 routes to lo), so that a cap per source address alone does not stop them.

Bounded in count and time: it runs for `seconds` at most and opens at most `max_connects` connections in
all. Run as a process (`start()` returns the Popen); it prints one JSON line of what it did when it ends
(on its own or at SIGTERM): connects, closes by the server, the most open at once.

hostile_main() is the frame of the scripts/hostile/ scripts built on it."""

import argparse
import contextlib
import errno
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import time

from cluster import Cluster, _die_with_parent


def start(port, conns, seconds, head=b"", mode="trickle", sources=32, first_source=2, max_connects=400000):
    """The flood as a child process, started and left to run; stop it with stop()."""
    return subprocess.Popen([sys.executable, __file__, "--port", str(port), "--conns", str(conns),
                             "--seconds", str(seconds), "--head", head.hex(), "--mode", mode,
                             "--sources", str(sources), "--first-source", str(first_source),
                             "--max-connects", str(max_connects)],
                            stdout=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)


def stop(proc):
    """Ends the flood; returns its report (a dict)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


@contextlib.contextmanager
def flooding(port, a, seconds, head, mode):
    """The flood of hostile_main's arguments `a` (conns, sources, first_source) for the body of a with
    statement; the dict it gives is filled with the flood's report when the body ends."""
    proc = start(port, a.conns, seconds, head=head, mode=mode, sources=a.sources, first_source=a.first_source)
    report = {}
    try:
        yield report
    finally:
        report.update(stop(proc))


def hostile_main(doc, run, add_arguments=lambda p: None):
    """A scripts/hostile/ script: common arguments, a cluster of real agents closed whatever happens, then
    run(cluster, args) -> (held, line); prints the line and returns the exit status (0 held, 1 broken)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--build", default=os.path.join(root, "build"), help="a build folder (agent/, ctl/)")
    p.add_argument("--conns", type=int, default=1000, help="the hostile connections")
    p.add_argument("--sources", type=int, default=32, help="attack from this many addresses, 127.0.0.<first> on")
    p.add_argument("--first-source", type=int, default=2, help="1 puts the attack on the agents' own address")
    p.add_argument("--agent-fd-limit", type=int, default=0,
                   help="the agents' descriptor limit (soft RLIMIT_NOFILE; 0: as inherited), e.g. the common 1024")
    add_arguments(p)
    a = p.parse_args()
    if a.agent_fd_limit:  # the agents inherit it; the flood raises its own again
        resource.setrlimit(resource.RLIMIT_NOFILE, (a.agent_fd_limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    c = Cluster(os.path.join(a.build, "agent", "ftl-agent"), os.path.join(a.build, "ctl", "ftlctl"))
    try:
        held, line = run(c, a)
    finally:
        c.close()
    print(line, flush=True)
    return 0 if held else 1


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


class Flood:
    def __init__(self, a):
        self.a = a
        self.head = bytes.fromhex(a.head)
        self.sel = selectors.DefaultSelector()
        self.socks = {}  # socket -> (index, bytes of the head still to send)
        self.connects = self.server_closes = self.peak_open = 0
        self.stopping = False

    def open(self, index):
        if self.connects >= self.a.max_connects:
            return
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((f"127.0.0.{self.a.first_source + index % self.a.sources}", 0))
            err = s.connect_ex(("127.0.0.1", self.a.port))
        except OSError:
            s.close()
            return
        if err not in (0, errno.EINPROGRESS):
            s.close()
            return
        self.connects += 1
        self.socks[s] = (index, self.head)
        self.sel.register(s, selectors.EVENT_READ)
        self.peak_open = max(self.peak_open, len(self.socks))

    def close(self, s):
        index, _ = self.socks.pop(s)
        self.sel.unregister(s)
        s.close()
        return index

    def trickle(self):
        """One byte more on every trickling connection (the head first, a byte at a time)."""
        for s, (index, left) in list(self.socks.items()):
            if self.a.mode == "idle" or (self.a.mode == "mix" and index % 2 == 0):
                continue
            try:
                s.send(left[:1] if left else b"a")
                self.socks[s] = (index, left[1:])
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                pass  # not connected yet, or closed: the read side notices

    def run(self):
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        raise_fd_limit(self.a.conns * 2 + 256)
        end = time.monotonic() + self.a.seconds
        for i in range(self.a.conns):
            self.open(i)
        next_trickle = time.monotonic()
        while not self.stopping and time.monotonic() < end:
            if time.monotonic() >= next_trickle:
                self.trickle()
                next_trickle += 1.0
            for key, _ in self.sel.select(timeout=0.05):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    continue  # an answer (an HTTP error, say): keep the connection as long as the server does
                self.server_closes += 1
                self.open(self.close(s))
        print(json.dumps({"connects": self.connects, "server_closes": self.server_closes,
                          "peak_open": self.peak_open, "open_at_end": len(self.socks)}), flush=True)
        for s in list(self.socks):
            self.close(s)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--conns", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--head", default="", help="hex bytes each connection sends first, a byte a second")
    p.add_argument("--mode", choices=("idle", "trickle", "mix"), default="trickle")
    p.add_argument("--sources", type=int, default=32, help="how many source addresses")
    p.add_argument("--first-source", type=int, default=2, help="the first is 127.0.0.<this>")
    p.add_argument("--max-connects", type=int, default=400000)
    Flood(p.parse_args()).run()


if __name__ == "__main__":
    main()
