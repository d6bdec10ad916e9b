"""torch.distributed.algorithms.Join with DDP on ftl's group: uneven inputs, as gloo trains them.

Three real workers; rank r has 2 + 2r batches (2, 4 and 6), each a forward, backward and optimizer step
under `with Join([ddp])`, so the ranks that run out shadow the others' allreduces (Join's own
collectives on DDP's group, which on ftl is the view's group: torch must find it registered). Two ways a
program may hold the Join:
- inside one step (the whole uneven loop is one agent.execute);
- around the steps (one agent.execute per batch, the Join's end outside any step).
One model trains both ways, one after the other; after each, every rank's parameters must equal (up to
summation order) what two such loops give on gloo, run afterwards in the same process with the same rank.
The parent prints one JSON line per rank and exits 1 on any difference.

    join_uneven.py
"""
import json
import os
import subprocess
import sys
import tempfile

WORLD = 3


def batches(rank):
    import torch
    return [torch.full((4, 3), float(rank + i + 1)) for i in range(2 + 2 * rank)]


def fresh():
    import torch
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.05)


def train_one(ddp, opt, x):
    ddp(x).sum().backward()
    opt.step()
    opt.zero_grad()


def params(model):
    return [p.detach().clone() for p in model.parameters()]


def on_ftl(index, ports, run_dir):
    """Both ways on ftl: {way: parameters}, and this worker's rank."""
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.join import Join
    import ftl
    import ftl.torch
    agent = ftl.Agent(name=f"j{index}", bind=f"127.0.0.1:{ports[index]}", seeds=f"127.0.0.1:{ports[0]}",
                      insecure=1, run_dir=os.path.join(run_dir, f"w{index}"), min_workers=WORLD, settle_ms=100,
                      log_level="warn", collective_timeout_ms=30000)
    ftl.torch.init_process_group(agent)
    model, opt = fresh()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ftl.torch.ElasticState(agent, ddp, opt)
    out = {}
    with agent:
        agent.execute(lambda info: None)  # the first view: all three
        rank = dist.get_rank()

        def uneven(info):
            with Join([ddp]):
                for x in batches(info.rank):
                    train_one(ddp, opt, x)
        agent.execute(uneven)
        out["inside"] = params(model)
        with Join([ddp]):
            for x in batches(rank):
                agent.execute(lambda info, x=x: train_one(ddp, opt, x))
        out["around"] = params(model)
    dist.destroy_process_group()
    return rank, out


def on_gloo(rank, port):
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.join import Join
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    model, opt = fresh()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    out = {}
    for way in ("inside", "around"):
        with Join([ddp]):
            for x in batches(rank):
                train_one(ddp, opt, x)
        out[way] = params(model)
    dist.destroy_process_group()
    return out


def worker(index, ports, run_dir):
    import torch
    rank, ours = on_ftl(index, ports[1:], run_dir)
    gloo = on_gloo(rank, ports[0])
    verdicts = {}
    for way, got in ours.items():
        try:
            for a, b in zip(got, gloo[way]):
                torch.testing.assert_close(a, b)
            verdicts[way] = "equal"
        except AssertionError as e:
            verdicts[way] = f"FAIL: {str(e).splitlines()[0]}"
    print(json.dumps({"rank": rank, **verdicts}), flush=True)
    return 1 if any(v != "equal" for v in verdicts.values()) else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(worker(int(sys.argv[2]), [int(p) for p in sys.argv[3].split(",")], sys.argv[4]))
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.join(here, "..", "agent")]
    from cluster import free_port
    from ranks import outputs
    ports = [free_port() for _ in range(WORLD + 1)]
    with tempfile.TemporaryDirectory() as run_dir:
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(i), ",".join(map(str, ports)), run_dir],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(WORLD)]
        results = outputs(procs, 180)
    for _, text in results:
        sys.stdout.write(text)
    bad = [i for i, (code, _) in enumerate(results) if code != 0]
    print("Join with uneven inputs: " + ("every rank equal to gloo, both ways" if not bad else f"workers {bad} failed"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
