"""A training step of compute plus a bucketed gradient allreduce, with and without overlap
(ftl.torch.GradientAverager(overlap=False|True)), under ftl's TCP backend on loopback.

Every rank runs, inside agent.execute, four kinds of step on the same model and batch, in interleaved
rounds (so a load change on the shared host hits every kind alike):
  compute   forward + backward only
  comm      the bucketed allreduce only (average() on the gradients already there)
  plain     forward + backward, then average(): compute then communication
  overlap   forward + backward with the buckets' allreduces started from the gradient hooks, average()
            waits for the rest
The overlapped model is a copy with its own hooks, so the other kinds make no collective from backward.
The figure is rank 0's median per kind; the issue's target is overlap <= 1.1 x max(compute, comm).
One JSON line per kind and a summary line.

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/torch/bench_overlap.py \
        [--world 2] [--layers 8] [--width 1024] [--bucket-mb 4] [--rounds 20]
"""
import argparse
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

KINDS = ("compute", "comm", "plain", "overlap")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(args):
    import torch
    import ftl
    import ftl.torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    twin = copy.deepcopy(model)
    x = torch.randn(args.batch, args.width)
    agent = ftl.Agent()
    plain = ftl.torch.GradientAverager(agent, model, bucket_cap_mb=args.bucket_mb)
    overlapped = ftl.torch.GradientAverager(agent, twin, bucket_cap_mb=args.bucket_mb, overlap=True)
    times = {k: [] for k in KINDS}

    def backward(m):
        for p in m.parameters():
            p.grad = None
        (m(x) ** 2).mean().backward()

    def run(kind):
        def step(info):
            t = time.perf_counter()
            if kind == "compute":
                backward(model)
            elif kind == "comm":
                plain.average()
            elif kind == "plain":
                backward(model)
                plain.average()
            else:
                backward(twin)
                overlapped.average()
            return time.perf_counter() - t
        return agent.execute(step)

    with agent:
        while agent.job_status()["world_size"] < args.world:
            agent.execute(lambda info: None)
        agent.execute(lambda info: backward(model))  # gradients exist for "comm"
        for r in range(args.warmup + args.rounds):
            for kind in KINDS:
                for _ in range(args.repeat):
                    t = run(kind)
                    if r >= args.warmup:
                        times[kind].append(t)
        agent.execute(lambda info: agent.barrier())
        return times, agent.job_status()["rank"], len(plain.buckets)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--bucket-mb", type=float, default=4)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--worker", action="store_true")
    p.add_argument("--out")
    args = p.parse_args()
    if args.worker:
        times, rank, n_buckets = worker(args)
        json.dump({"rank": rank, "times": times, "buckets": n_buckets}, open(args.out, "w"))
        return
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for r in range(args.world):
            env = dict(os.environ, OMP_NUM_THREADS="1", FTL_NAME=f"o{r}",
                       FTL_BIND=f"127.0.0.1:{port if r == 0 else free_port()}", FTL_SEEDS=f"127.0.0.1:{port}",
                       FTL_INSECURE="1", FTL_RUN_DIR=tmp, FTL_EXPECTED_WORKERS=str(args.world),
                       FTL_LOG_LEVEL="warn")
            cmd = [sys.executable, __file__, "--worker", "--world", str(args.world), "--layers", str(args.layers),
                   "--width", str(args.width), "--batch", str(args.batch), "--bucket-mb", str(args.bucket_mb),
                   "--rounds", str(args.rounds), "--repeat", str(args.repeat), "--warmup", str(args.warmup),
                   "--out", os.path.join(tmp, f"w{r}.json")]
            procs.append(subprocess.Popen(cmd, env=env))
        for proc in procs:
            if proc.wait(timeout=900) != 0:
                raise SystemExit(f"bench_overlap: a worker exited {proc.returncode}")
        results = [json.load(open(os.path.join(tmp, f"w{r}.json"))) for r in range(args.world)]
    res = next(r for r in results if r["rank"] == 0)
    params = args.layers * (args.width * args.width + args.width)
    med = {}
    for kind in KINDS:
        t = res["times"][kind]
        med[kind] = statistics.median(t)
        print(json.dumps({"bench": "torch_overlap", "kind": kind, "world": args.world, "params": params,
                          "grad_mb": round(params * 4 / 2**20, 1), "buckets": res["buckets"], "steps": len(t),
                          "median_ms": round(med[kind] * 1e3, 2),
                          "p90_ms": round(sorted(t)[int(len(t) * 0.9)] * 1e3, 2)}), flush=True)
    bound = max(med["compute"], med["comm"])
    print(json.dumps({"bench": "torch_overlap", "figure": "summary", "world": args.world,
                      "overlap_over_plain": round(med["overlap"] / med["plain"], 3),
                      "overlap_over_max_compute_comm": round(med["overlap"] / bound, 3),
                      "target_overlap_over_max": 1.1}))


if __name__ == "__main__":
    main()
