#!/usr/bin/env python3
"""Item 5 of "Nothing lost, whoever joins": /metrics must stay scrapable under slowloris.

Starts one agent with FTL_METRICS_ADDR, scrapes it --scrapes times unattacked, then opens 1,000 connections
from 127.0.0.2-127.0.0.33 that trickle a request head a byte a second (each reopened as soon as the agent
closes it) and scrapes --scrapes times again, each with a --timeout second limit. Held when every scrape
under attack is answered 200 and the agent still runs. Prints one line, `item 5: held|broken — <figures>`;
exit 0 when held."""

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
import conn_flood  # noqa: E402
import exposition  # noqa: E402
from cluster import free_port  # noqa: E402

REQUEST_HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "  # never ends: no blank line


def scrapes(addr, n, timeout, quiet=False):
    """(answered, latencies in ms of the answered) for n scrapes one after another; failures are told on
    stderr unless quiet."""
    ok, took = 0, []
    for _ in range(n):
        start = time.monotonic()
        try:
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
        hit_ok, hit_ms = scrapes(addr, a.scrapes, a.timeout)
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


if __name__ == "__main__":
    sys.exit(conn_flood.hostile_main(__doc__, run, add_arguments))
