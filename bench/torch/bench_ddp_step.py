"""Step time of the PyTorch example's training step under ftl (fused gradient buckets through libftl's
TCP allreduce, inside agent.execute) against the same step under torch.distributed DDP with the Gloo
backend: same model (examples/torch_digits.py's MLP, Adam), same data, same per-rank batch, same world
size, same machine, one run each, one process per rank, torch on one thread per process.

Both steps do the same work: forward, backward, one allreduce of the step's statistics (loss, correct,
samples) and the gradient average, then the optimizer step. DDP averages the gradients during backward
(its own buckets and hooks); ftl after it (ftl.torch.GradientAverager). The figure is the median
step time over the timed steps of rank 0, after warm-up. One JSON line per mode and a ratio line.

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/torch/bench_ddp_step.py [--world 4] [--steps 300]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(batch):
    import torch
    from sklearn.datasets import load_digits
    torch.set_num_threads(1)
    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    return torch, x, y, model


def batch_of(torch, x, y, step, rank, world, batch):
    """The same deterministic slices in both modes: step s, rank r takes a contiguous window."""
    start = ((step * world + rank) * batch) % (len(x) - batch)
    return x[start:start + batch], y[start:start + batch]


def run_ftl(args):
    import ftl
    import ftl.torch
    torch, x, y, model = setup(args.batch)
    import torch.nn.functional as F
    agent = ftl.Agent()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    ftl.torch.ElasticState(agent, model, optimizer)
    grads = ftl.torch.GradientAverager(agent, model)
    times = []

    def step(info):
        xb, yb = batch_of(torch, x, y, info.step, info.rank, info.world_size, args.batch)
        optimizer.zero_grad(set_to_none=True)
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        loss.backward()
        stats = torch.tensor([loss.item() * len(yb), (logits.argmax(1) == yb).sum().item(), len(yb)],
                             dtype=torch.float64)
        agent.allreduce(stats)
        grads.average()
        optimizer.step()

    with agent:
        while agent.job_status()["world_size"] < args.world or agent.job_status()["step"] < args.warmup:
            agent.execute(step)
        for _ in range(args.steps):
            t = time.perf_counter()
            agent.execute(step)
            times.append(time.perf_counter() - t)
        agent.execute(lambda info: agent.barrier())
        return times, agent.job_status()["rank"]


def run_ddp(args):
    torch, x, y, model = setup(args.batch)
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=args.rank,
                            world_size=args.world)
    ddp = DDP(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=0.005)
    times = []
    for s in range(args.warmup + args.steps):
        t = time.perf_counter()
        xb, yb = batch_of(torch, x, y, s, args.rank, args.world, args.batch)
        optimizer.zero_grad(set_to_none=True)
        logits = ddp(xb)
        loss = F.cross_entropy(logits, yb)
        loss.backward()
        stats = torch.tensor([loss.item() * len(yb), (logits.argmax(1) == yb).sum().item(), len(yb)],
                             dtype=torch.float64)
        dist.all_reduce(stats)
        optimizer.step()
        if s >= args.warmup:
            times.append(time.perf_counter() - t)
    dist.barrier()
    dist.destroy_process_group()
    return times, args.rank


def drive(args, mode):
    """Starts world processes of one mode; returns rank 0's step times."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for r in range(args.world):
            env = dict(os.environ, OMP_NUM_THREADS="1")
            if mode == "ftl":
                env.update(FTL_NAME=f"b{r}", FTL_BIND=f"127.0.0.1:{port + r}" if r else f"127.0.0.1:{port}",
                           FTL_SEEDS=f"127.0.0.1:{port}", FTL_INSECURE="1", FTL_RUN_DIR=tmp,
                           FTL_EXPECTED_WORKERS=str(args.world), FTL_LOG_LEVEL="warn")
            cmd = [sys.executable, __file__, "--worker", mode, "--rank", str(r), "--port", str(port),
                   "--world", str(args.world), "--steps", str(args.steps), "--warmup", str(args.warmup),
                   "--batch", str(args.batch), "--out", os.path.join(tmp, f"{mode}{r}.json")]
            procs.append(subprocess.Popen(cmd, env=env))
        for p in procs:
            if p.wait(timeout=600) != 0:
                raise SystemExit(f"bench_ddp_step: a {mode} worker exited {p.returncode}")
        results = [json.load(open(os.path.join(tmp, f"{mode}{r}.json"))) for r in range(args.world)]
        return next(res["times"] for res in results if res["rank"] == 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--worker", choices=["ftl", "ddp"])
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--out")
    args = p.parse_args()
    if args.worker:
        times, rank = (run_ftl if args.worker == "ftl" else run_ddp)(args)
        json.dump({"rank": rank, "times": times}, open(args.out, "w"))
        return
    medians = {}
    for mode in ("ddp", "ftl"):
        times = drive(args, mode)
        medians[mode] = statistics.median(times)
        print(json.dumps({"bench": "torch_step", "mode": mode if mode == "ftl" else "ddp_gloo", "world": args.world,
                          "batch_per_rank": args.batch, "steps": len(times),
                          "median_ms": round(medians[mode] * 1e3, 3),
                          "p90_ms": round(sorted(times)[int(len(times) * 0.9)] * 1e3, 3)}), flush=True)
    print(json.dumps({"bench": "torch_step", "figure": "ftl_over_ddp_gloo", "world": args.world,
                      "ratio": round(medians["ftl"] / medians["ddp"], 3)}))


if __name__ == "__main__":
    main()
