"""A torch.distributed.checkpoint saved by a job of three and loaded by a job of two, both on ftl's group:
the resume of a job that lost a worker, from a sharded checkpoint.

The state: a DTensor sharded by rows over a DeviceMesh of the world (7 rows: 3, 3 and 1 per rank at three,
4 and 3 at two; each rank writes its own shard), a tensor and a model's parameters (the same on every
rank: DCP writes them once). The job of three saves; then a new job of two (new agents, new run
directories, the same checkpoint directory) makes the same state on its own mesh of two and loads it.
Each rank of the second job must hold its rows of the whole tensor, and the rest as saved. The parent
prints one JSON line per worker and exits 1 on any difference.

    dcp_reshard.py
"""
import json
import os
import subprocess
import sys
import tempfile


def state(world, fill):
    """The state to save (fill: the values) or to load into (fill None: zeros), on a mesh of the world."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0 if fill else 1)
    model = torch.nn.Linear(3, 2)
    rows = torch.arange(21.0).reshape(7, 3) if fill else torch.zeros(7, 3)
    return {"rows": distribute_tensor(rows, mesh, [Shard(0)]), "seen": torch.full((2,), 5.0 if fill else 0.0),
            "model": model.state_dict()}


def worker(phase, index, world, ports, run_dir, checkpoint):
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    import ftl
    import ftl.torch
    agent = ftl.Agent(name=f"{phase}{index}", bind=f"127.0.0.1:{ports[index]}", seeds=f"127.0.0.1:{ports[0]}",
                      insecure=1, run_dir=os.path.join(run_dir, f"{phase}{index}"), min_workers=world,
                      settle_ms=100, log_level="warn", collective_timeout_ms=30000)
    ftl.torch.init_process_group(agent)
    with agent:
        agent.execute(lambda info: None)  # the first view: the whole job
        rank = dist.get_rank()
        if phase == "save":
            dcp.save(state(world, fill=True), checkpoint_id=checkpoint)
            problems = []
        else:
            back = state(world, fill=False)
            dcp.load(back, checkpoint_id=checkpoint)
            truth = state(world, fill=True)
            problems = [k for k in ("seen",) if not torch.equal(back[k], truth[k])]
            problems += [f"model.{k}" for k in truth["model"] if not torch.equal(back["model"][k], truth["model"][k])]
            if not torch.equal(back["rows"].to_local(), truth["rows"].to_local()):
                problems.append(f"rows: {back['rows'].to_local().tolist()} != {truth['rows'].to_local().tolist()}")
    dist.destroy_process_group()
    print(json.dumps({"phase": phase, "rank": rank, "world": world, "problems": problems}), flush=True)
    return 1 if problems else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        phase, index, world = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        sys.exit(worker(phase, index, world, [int(p) for p in sys.argv[5].split(",")], sys.argv[6], sys.argv[7]))
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.join(here, "..", "agent")]
    from cluster import free_port
    from ranks import outputs
    bad = []
    with tempfile.TemporaryDirectory() as run_dir:
        checkpoint = os.path.join(run_dir, "checkpoint")
        for phase, world in (("save", 3), ("load", 2)):
            ports = ",".join(str(free_port()) for _ in range(world))
            procs = [subprocess.Popen([sys.executable, __file__, "--worker", phase, str(i), str(world), ports, run_dir,
                                       checkpoint], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for i in range(world)]
            for i, (code, text) in enumerate(outputs(procs, 120)):
                sys.stdout.write(text)
                if code != 0:
                    bad.append(f"{phase} worker {i}")
            if bad:
                break
    print("DCP saved by 3, loaded by 2: " + ("every rank holds what was saved" if not bad else f"{bad} failed"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
