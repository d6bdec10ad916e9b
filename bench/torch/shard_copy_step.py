"""What keeping a copy of each shard on its neighbour costs a step: ftl.torch.ElasticState(copy_shards=True)
against the same job without it (issue 40, item 4: FSDP without replicas).

One replica of --shards real worker processes on this machine (FSDP2's fully_shard on ftl.torch.hsdp_mesh,
Adam, step mode), a model of --shard-mb MiB of float32 parameters per shard; each run trains --steps steps
and rank 0 reports the median wall time of a step after --warmup. Runs alternate copies off and on (a load
change hits both alike). One JSON line per run, then one with the medians of runs and their ratio.

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/torch/shard_copy_step.py --shard-mb 10
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROWS, DIM = 16, 64


def worker(index, size, ports, run_dir, hidden, steps, copies):
    import torch
    import ftl
    import ftl.torch
    from torch.distributed.fsdp import fully_shard
    torch.set_num_threads(1)
    agent = ftl.Agent(name=f"s{index}", bind=f"127.0.0.1:{ports[index]}", seeds=f"127.0.0.1:{ports[0]}",
                      insecure=1, run_dir=os.path.join(run_dir, f"s{index}"), expected_workers=size,
                      replica="r0", replica_index=index, replica_size=size, log_level="warn")
    ftl.torch.init_process_group(agent)
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, DIM))
    mesh = ftl.torch.hsdp_mesh(agent)
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ftl.torch.ElasticState(agent, model, optimizer, copy_shards=copies)
    ends = []

    def step(info):
        optimizer.zero_grad()
        g = torch.Generator().manual_seed(info.step * 100 + info.rank)
        model(torch.randn(ROWS, DIM, generator=g)).pow(2).mean().backward()
        optimizer.step()

    with agent:
        for _ in range(steps):
            agent.execute(step)
            ends.append(time.perf_counter())
    if index == 0:
        print(json.dumps({"steps": [b - a for a, b in zip(ends, ends[1:])]}), flush=True)


def one_run(a, hidden, copies):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "agent"))
    from cluster import free_port
    ports = [free_port() for _ in range(a.shards)]
    with tempfile.TemporaryDirectory() as run_dir:
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(i), str(a.shards),
                                   ",".join(map(str, ports)), run_dir, str(hidden), str(a.steps), str(int(copies))],
                                  stdout=subprocess.PIPE, text=True) for i in range(a.shards)]
        outs = [p.communicate(timeout=900)[0] for p in procs]
        if any(p.returncode for p in procs):
            sys.exit(f"shard_copy_step: a worker failed: {[p.returncode for p in procs]}")
    times = json.loads(outs[0].strip().splitlines()[-1])["steps"][a.warmup:]
    return statistics.median(times)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        i, size, ports, run_dir, hidden, steps, copies = sys.argv[2:9]
        worker(int(i), int(size), [int(p) for p in ports.split(",")], run_dir, int(hidden), int(steps), copies == "1")
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", type=int, default=3)
    p.add_argument("--shard-mb", type=float, default=10.0, help="parameters per shard, in MiB (float32)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    # Linear(DIM, h) + Linear(h, DIM): (2 DIM + 1) h + DIM floats over the shards
    hidden = max(a.shards, int(a.shard_mb * 2**20 / 4 * a.shards / (2 * DIM + 1)))
    shard_mb = round(((2 * DIM + 1) * hidden + DIM) * 4 / a.shards / 2**20, 2)
    medians = {False: [], True: []}
    for run in range(a.runs):
        for copies in (False, True):
            medians[copies].append(one_run(a, hidden, copies))
            print(json.dumps({"bench": "shard_copy_step", "run": run, "shards": a.shards, "shard_mb": shard_mb,
                              "copy_shards": copies, "step_s": round(medians[copies][-1], 4)}), flush=True)
    off, on = statistics.median(medians[False]), statistics.median(medians[True])
    print(json.dumps({"bench": "shard_copy_step", "shards": a.shards, "shard_mb": shard_mb, "runs": a.runs,
                      "step_s_without": round(off, 4), "step_s_with": round(on, 4),
                      "with_over_without": round(on / off, 3)}))


if __name__ == "__main__":
    main()
