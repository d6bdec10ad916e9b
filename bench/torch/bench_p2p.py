"""all_to_all_single and send/recv through torch.distributed on ftl's group against the same calls on gloo:
same processes, same tensors, same machine, one process per rank, torch on one thread per process.

Each rank runs the ftl round first (ftl.torch.init_process_group, between steps, on the first view), then
gloo with the rank ftl gave it, then again (--runs interleaved rounds, so a load change hits both alike).
The calls timed, per size (bytes each rank sends in all):
  all_to_all_single  every rank sends size / world bytes to each rank (itself included)
  send_recv          a ring shift: isend(size bytes) to rank + 1, irecv from rank - 1, wait both
Figures follow nccl-tests: algbw = bytes / time; busbw = algbw * (n - 1) / n for all-to-all, = algbw for
the shift. The time is rank 0's median over the timed iterations. One JSON line per backend, call, size
and round, then a ratio line (ftl busbw / gloo busbw, medians of rounds) per call and size.

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/torch/bench_p2p.py \
        [--world 2] [--sizes 65536,16777216] [--iters 30] [--runs 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta


def free_ports(k):
    """k loopback ports, none handed out twice (tests/agent/cluster.py: below the ephemeral range)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "agent"))
    from cluster import free_port
    return [free_port() for _ in range(k)]


def timed(fn, iters):
    """Median seconds of fn over iters calls, after two warm-up calls; a barrier before each."""
    import torch.distributed as dist
    for _ in range(2):
        fn()
    times = []
    for _ in range(iters):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(sizes, iters):
    import torch
    import torch.distributed as dist
    rank, n = dist.get_rank(), dist.get_world_size()
    out = []
    for size in sizes:
        per = size // n // 4
        x = torch.full((per * n,), float(rank))
        y = torch.empty(per * n)
        t = timed(lambda: dist.all_to_all_single(y, x), iters)
        assert all(y[q * per] == q for q in range(n)), "all_to_all_single gave wrong data"
        out.append(("all_to_all_single", size, t, size / t, size / t * (n - 1) / n))
        s = torch.full((size // 4,), float(rank))
        r = torch.empty(size // 4)

        def shift():
            works = [dist.isend(s, (rank + 1) % n), dist.irecv(r, (rank - 1) % n)]
            for w in works:
                w.wait()
        t = timed(shift, iters)
        assert r[0] == (rank - 1) % n, "send/recv gave wrong data"
        out.append(("send_recv", size, t, size / t, size / t))
    return out


def rank_main(index, world, gloo_ports, ftl_ports, run_dir, sizes, iters, runs):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    import ftl
    import ftl.torch
    agent = ftl.Agent(name=f"b{index}", bind=f"127.0.0.1:{ftl_ports[index]}", seeds=f"127.0.0.1:{ftl_ports[0]}",
                      insecure=1, run_dir=os.path.join(run_dir, f"r{index}"), min_workers=world, settle_ms=100,
                      log_level="warn", collective_timeout_ms=60000)
    rows = []
    with agent:
        for run in range(runs):
            ftl.torch.init_process_group(agent)
            agent.execute(lambda info: None)
            rank = dist.get_rank()
            rows += [("ftl", run) + r for r in measure(sizes, iters)]
            dist.destroy_process_group()
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{gloo_ports[run]}", rank=rank,
                                    world_size=world, timeout=timedelta(seconds=60))
            rows += [("gloo", run) + r for r in measure(sizes, iters)]
            dist.destroy_process_group()
    if rank == 0:
        for backend, run, call, size, t, algbw, busbw in rows:
            print(json.dumps({"bench": "p2p", "backend": backend, "call": call, "world": world, "bytes": size,
                              "round": run, "us": round(t * 1e6, 1), "algbw_gbps": round(algbw / 1e9, 3),
                              "busbw_gbps": round(busbw / 1e9, 3)}), flush=True)
        for call in ("all_to_all_single", "send_recv"):
            for size in sizes:
                bw = {b: statistics.median(r[6] for r in rows if r[0] == b and r[2] == call and r[3] == size)
                      for b in ("ftl", "gloo")}
                print(json.dumps({"bench": "p2p_ratio", "call": call, "world": world, "bytes": size,
                                  "ftl_over_gloo_busbw": round(bw["ftl"] / bw["gloo"], 3)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--sizes", default="65536,16777216")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rank", type=int, default=None)
    ap.add_argument("--ports", default=None)
    ap.add_argument("--run-dir", default=None)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.rank is not None:
        ports = [int(p) for p in a.ports.split(",")]
        rank_main(a.rank, a.world, ports[:a.runs], ports[a.runs:], a.run_dir, sizes, a.iters, a.runs)
        return
    ports = free_ports(a.runs + a.world)
    with tempfile.TemporaryDirectory() as run_dir:
        procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), "--world", str(a.world), "--sizes",
                                   a.sizes, "--iters", str(a.iters), "--runs", str(a.runs), "--ports",
                                   ",".join(map(str, ports)), "--run-dir", run_dir]) for r in range(a.world)]
        codes = [p.wait() for p in procs]
    sys.exit(1 if any(codes) else 0)


if __name__ == "__main__":
    main()
