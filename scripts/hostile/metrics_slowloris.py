#!/usr/bin/env python3
"""Item 5 of "Nothing lost, whoever joins": /metrics must stay scrapable under slowloris.

Starts one agent with FTL_METRICS_ADDR, scrapes it --scrapes times unattacked, then opens 1,000 connections
from 127.0.0.2-127.0.0.33 that trickle a request head a byte a second (each reopened as soon as the agent
closes it) and scrapes --scrapes times again, each with a --timeout second limit. Held when every scrape
under attack is answered 200 and the agent still runs. Every other scrape under attack waits --write-delay
seconds between its connect and its request, as a scraper descheduled on a loaded machine does. Prints one line, `item 5: held|broken — <figures>`;
exit 0 when held."""

import os
import socket
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
import conn_flood  # noqa: E402
import exposition  # noqa: E402
from cluster import free_port  # noqa: E402

REQUEST_HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "  # never ends: no blank line


def slow_scrape(addr, timeout, write_delay):
    """GET /metrics by hand, waiting write_delay seconds between the connect and the request: (status, the
    reply as text)."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        time.sleep(write_delay)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    if not reply:
        raise ConnectionResetError("closed without a reply")
    status = int(reply.split(b" ", 2)[1])
    return status, reply.decode(errors="replace")


def scrapes(addr, n, timeout, quiet=False, write_delay=0.0):
    """(answered, latencies in ms of the answered) for n scrapes one after another, every other one slow to
    write its request when write_delay is set; failures are told on stderr unless quiet."""
    ok, took = 0, []
    for i in range(n):
        start = time.monotonic()
        try:
            if write_delay and i % 2:
                status, text = slow_scrape(addr, timeout, write_delay)
                start += write_delay  # the scraper's own wait is not the agent's latency
            else:
                status, _, text = exposition.scrape(addr, timeout=timeout)
            if status == 200 and "ftl_agent_info" in text:
                ok += 1
                took.append((time.monotonic() - start) * 1000)
        except OSError as e:
            if not quiet:
                print(f"scrape failed after {time.monotonic() - start:.2f} s: {e!r}", file=sys.stderr)
        time.sleep(0.05)
    return ok, took


def median(ms):
    return f"{statistics.median(ms):.0f} ms" if ms else "-"


def run(c, a):
    addr = f"127.0.0.1:{free_port()}"
    w0 = c.add("w0", FTL_METRICS_ADDR=addr)
    deadline = time.monotonic() + 10
    while scrapes(addr, 1, a.timeout, quiet=True)[0] == 0:  # until the agent listens
        if time.monotonic() > deadline:
            return False, "item 5: broken — the agent did not serve /metrics unattacked"
    calm_ok, calm_ms = scrapes(addr, a.scrapes, a.timeout)
    port = int(addr.rsplit(":", 1)[1])
    with conn_flood.flooding(port, a, a.scrapes * (a.timeout + 0.1) + 10, REQUEST_HEAD, "trickle") as report:
        time.sleep(2.0)  # the flood opens its connections and they start trickling
        hit_ok, hit_ms = scrapes(addr, a.scrapes, a.timeout, write_delay=a.write_delay)
        counters = (c.status(w0) or {}).get("counters", {})
    runs = w0.is_running()
    held = runs and calm_ok == a.scrapes and hit_ok == a.scrapes
    dropped = counters.get("metrics_http_dropped", {})
    return held, (f"item 5: {'held' if held else 'broken'} — {hit_ok}/{a.scrapes} scrapes under {a.conns} "
                  f"trickling connections, median {median(hit_ms)}, slowest {max(hit_ms, default=0):.0f} ms "
                  f"(unattacked {calm_ok}/{a.scrapes}, median {median(calm_ms)}); flood made "
                  f"{report.get('connects', 0)} connects, at most {report.get('peak_open', 0)} open; agent "
                  f"evicted {dropped.get('evicted', 0)}, timed out {dropped.get('timeout', 0)}"
                  f"{'' if runs else '; the agent EXITED'}")


def add_arguments(p):
    p.add_argument("--scrapes", type=int, default=20)
    p.add_argument("--timeout", type=float, default=2.0, help="seconds one scrape may take")
    p.add_argument("--write-delay", type=float, default=0.05,
                   help="seconds every other scrape under attack waits between its connect and its request")


if __name__ == "__main__":
    sys.exit(conn_flood.hostile_main(__doc__, run, add_arguments))
