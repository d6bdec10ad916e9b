#!/usr/bin/env python3
"""The compressed allreduce's speed-up: reads bench_comm_tcp's JSON lines (stdin) and prints, for each rank
count and compressed mode (ftl_tcp_bf16, ftl_tcp_bf16ef), one JSON line comparing its effective busbw (f32
bytes over time) with the uncompressed ftl_tcp figure of the same run at 64 MiB. Issue 12's target: 1.8x."""
import json
import sys

SIZE = 64 << 20
TARGET = 1.8


def main():
    figures = {}
    for line in sys.stdin:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("bench") == "allreduce" and r.get("bytes") == SIZE:
            figures[(r["impl"], r["ranks"])] = r["busbw_GBps"]
    for (impl, ranks), busbw in sorted(figures.items()):
        base = figures.get(("ftl_tcp", ranks))
        if not impl.startswith("ftl_tcp_bf16") or not base:
            continue
        print(json.dumps({"bench": "allreduce_compressed_speedup", "impl": impl, "ranks": ranks, "bytes": SIZE,
                          "busbw_GBps": busbw, "f32_busbw_GBps": base, "speedup": round(busbw / base, 3),
                          "target": TARGET}, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
