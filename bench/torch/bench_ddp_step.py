"""Step time of the PyTorch example's training step under ftl against the same step under
torch.distributed DDP with the Gloo backend: same model (examples/torch_digits.py's MLP, Adam), same data,
same per-rank batch, same world size, same machine, one process per rank, torch on one thread per process.
Three modes, run in --runs interleaved rounds (a load change on the shared host hits each alike):
  ddp_gloo  DDP on a Gloo process group: the fixed-world baseline
  ftl_ddp   the same DDP on ftl.torch.process_group(agent), inside agent.execute (issue 25's route)
  ftl       ftl.torch.GradientAverager (fused buckets after backward), inside agent.execute

Every step does the same work: forward, backward, one allreduce of the step's statistics (loss, correct,
samples) and the gradient average, then the optimizer step. DDP averages the gradients during backward
(its own buckets and hooks, overlapped with backward); GradientAverager after it. The figure is the
median step time over the timed steps of rank 0, after warm-up, per round; the ratio lines divide each
ftl mode's median of rounds by DDP-Gloo's. One JSON line per mode and round, then the ratio lines.

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/torch/bench_ddp_step.py \
        [--world 4] [--steps 300] [--runs 3] [--modes ddp,ftl_ddp,ftl,ftl_overlap] [--model digits|gpt]
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


def setup(args):
    """(torch, inputs, targets, model): the digits MLP, or examples/torch_char_gpt.py's transformer on its
    text (--model gpt: 64-character windows, the example's default size)."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.model == "gpt":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
        from models import char_gpt
        train, _, vocab = char_gpt.datasets(64)
        x, y = train.tensors
        return torch, x, y, char_gpt.CharGPT(vocab, 64, 2, 4, 64)
    from sklearn.datasets import load_digits
    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    return torch, x, y, model


def batch_of(torch, x, y, step, rank, world, batch):
    """The same deterministic slices in both modes: step s, rank r takes a contiguous window."""
    start = ((step * world + rank) * batch) % (len(x) - batch)
    return x[start:start + batch], y[start:start + batch]


def one_step(torch, model, optimizer, xb, yb, reduce_stats, average_grads=None):
    """The step every mode times: forward, backward, the statistics' allreduce (reduce_stats), the gradient
    average (inside backward for DDP; average_grads after it otherwise), the optimizer."""
    import torch.nn.functional as F
    optimizer.zero_grad(set_to_none=True)
    logits, yb = model(xb).flatten(0, -2), yb.flatten()  # (samples or characters, classes)
    loss = F.cross_entropy(logits, yb)
    loss.backward()
    stats = torch.tensor([loss.item() * len(yb), (logits.argmax(1) == yb).sum().item(), len(yb)],
                         dtype=torch.float64)
    reduce_stats(stats)
    if average_grads is not None:
        average_grads()
    optimizer.step()


def timed_steps(agent, step, args):
    """Runs the warm-up steps (until the whole world is in), then times args.steps steps; (times, rank)."""
    times = []
    with agent:
        while agent.job_status()["world_size"] < args.world or agent.job_status()["step"] < args.warmup:
            agent.execute(step)
        for _ in range(args.steps):
            t = time.perf_counter()
            agent.execute(step)
            times.append(time.perf_counter() - t)
        agent.execute(lambda info: agent.barrier())
        return times, agent.job_status()["rank"]


def run_ftl(args):
    import ftl
    import ftl.torch
    torch, x, y, model = setup(args)
    agent = ftl.Agent()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    ftl.torch.ElasticState(agent, model, optimizer)
    grads = ftl.torch.GradientAverager(agent, model, overlap=args.worker == "ftl_overlap")
    def step(info):
        xb, yb = batch_of(torch, x, y, info.step, info.rank, info.world_size, args.batch)
        one_step(torch, model, optimizer, xb, yb, agent.allreduce, grads.average)

    return timed_steps(agent, step, args)


def run_ftl_ddp(args):
    import ftl
    import ftl.torch
    torch, x, y, model = setup(args)
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    agent = ftl.Agent()
    group = ftl.torch.process_group(agent)
    ddp = DDP(model, process_group=group)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=0.005)
    ftl.torch.ElasticState(agent, ddp, optimizer)
    def step(info):
        xb, yb = batch_of(torch, x, y, info.step, info.rank, info.world_size, args.batch)
        one_step(torch, ddp, optimizer, xb, yb, lambda stats: dist.all_reduce(stats, group=group))

    return timed_steps(agent, step, args)


def run_ddp(args):
    torch, x, y, model = setup(args)
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=args.rank,
                            world_size=args.world)
    ddp = DDP(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=0.005)
    times = []
    for s in range(args.warmup + args.steps):
        t = time.perf_counter()
        xb, yb = batch_of(torch, x, y, s, args.rank, args.world, args.batch)
        one_step(torch, ddp, optimizer, xb, yb, dist.all_reduce)
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
            if mode.startswith("ftl"):
                env.update(FTL_NAME=f"b{r}", FTL_BIND=f"127.0.0.1:{port + r}" if r else f"127.0.0.1:{port}",
                           FTL_SEEDS=f"127.0.0.1:{port}", FTL_INSECURE="1", FTL_RUN_DIR=tmp,
                           FTL_EXPECTED_WORKERS=str(args.world), FTL_LOG_LEVEL="warn")
            cmd = [sys.executable, __file__, "--worker", mode, "--rank", str(r), "--port", str(port),
                   "--world", str(args.world), "--steps", str(args.steps), "--warmup", str(args.warmup),
                   "--batch", str(args.batch), "--model", args.model, "--out", os.path.join(tmp, f"{mode}{r}.json")]
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
    p.add_argument("--runs", type=int, default=1, help="interleaved rounds of every mode")
    p.add_argument("--modes", default="ddp,ftl_ddp,ftl",
                   help="comma-separated: ddp (Gloo), ftl_ddp, ftl, ftl_overlap (GradientAverager(overlap=True))")
    p.add_argument("--model", choices=["digits", "gpt"], default="digits")
    p.add_argument("--worker", choices=["ftl", "ftl_overlap", "ftl_ddp", "ddp"])
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--out")
    args = p.parse_args()
    if args.worker:
        run = {"ftl": run_ftl, "ftl_overlap": run_ftl, "ftl_ddp": run_ftl_ddp, "ddp": run_ddp}[args.worker]
        times, rank = run(args)
        json.dump({"rank": rank, "times": times}, open(args.out, "w"))
        return
    modes = args.modes.split(",")
    medians = {mode: [] for mode in modes}
    for round_ in range(args.runs):
        for mode in modes:
            times = drive(args, mode)
            medians[mode].append(statistics.median(times))
            print(json.dumps({"bench": "torch_step", "mode": "ddp_gloo" if mode == "ddp" else mode,
                              "model": args.model, "world": args.world, "round": round_, "batch_per_rank": args.batch,
                              "steps": len(times), "median_ms": round(medians[mode][-1] * 1e3, 3),
                              "p90_ms": round(sorted(times)[int(len(times) * 0.9)] * 1e3, 3)}), flush=True)
    if "ddp" in medians:
        base = statistics.median(medians["ddp"])
        for mode in modes:
            if mode != "ddp":
                print(json.dumps({"bench": "torch_step", "figure": f"{mode}_over_ddp_gloo", "model": args.model,
                                  "world": args.world,
                                  "runs": args.runs, "ratio": round(statistics.median(medians[mode]) / base, 3)}))


if __name__ == "__main__":
    main()
