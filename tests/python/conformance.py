"""torch.distributed on ftl's group against gloo, call by call: the conformance matrix.

One process per rank (real processes, real sockets). Each runs every case of the matrix twice with the
same inputs: first on a gloo default group (dist.init_process_group("gloo")), then on ftl's
(ftl.torch.init_process_group(agent), between steps, on the view in hand), and compares the two answers:
- both answered: equal; exactly for integers, bool, bytes and objects; floats within torch's default
  tolerance of their dtype (the inputs are small integers, so only an average's rounding can differ);
- gloo answered and ftl refused: a failure, unless the case is in GAPS (what ftl refuses on purpose today),
  and then ftl's refusal must be one of its own sentences ("ftl: ..."), never a wrong answer;
- a case in GAPS that ftl answers is a failure too, so the list cannot go stale;
- gloo refused: whatever ftl does is fine (both refused, or ftl does more), and is reported.
The parent prints each rank's report (one JSON line per case) and exits 1 if any rank found a mismatch.

    conformance.py WORLD            (the parent: starts WORLD ranks on loopback)
"""
import json
import os
import subprocess
import sys
import tempfile
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

# What ftl refuses, with one of its sentences, where gloo answers. Each entry says why; closing one means
# building it, and then this test insists it be taken off.
GAPS = {
    "ddp_without_elastic_state": "refused: its gradients would be summed, not averaged",
}
GAP_ON = {}  # the ranks a gap is on, where not all: name -> fn(rank, world)
# What an older torch itself refuses on any group but gloo's, with its own sentence (torch 2.11's
# dist.monitored_barrier); a newer torch hands the call to the group. name -> the sentence's words.
TORCH_REFUSES = {"monitored_barrier": "only implemented for GLOO backend"}

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8,
          torch.int8, torch.bool]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
CASES = []


TRUTHS = {}


def case(name, truth=None):
    """A case of the matrix; truth(rank, world), where given, is the right answer, and ftl must give it
    even where gloo does not (gloo's own mismatch is then reported, not failed)."""
    def register(fn):
        CASES.append((name, fn))
        if truth is not None:
            TRUTHS[name] = truth
        return fn
    return register


def values(rank, n, dtype, salt=0):
    """Rank's input: small integers (1..3; 0/1 for bool), so sums and products are exact in every dtype."""
    i = torch.arange(n)
    if dtype == torch.bool:
        return ((i + rank + salt) % 2).to(torch.bool)
    return (((rank + 1) * (i + 1 + salt)) % 3 + 1).to(dtype)


def add_allreduce_cases():
    for op in OPS:
        for dtype in DTYPES:
            def run(rank, world, op=op, dtype=dtype):
                x = values(rank, 7, dtype)
                dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
                return x
            case(f"all_reduce_{op}_{str(dtype)[6:]}")(run)


add_allreduce_cases()


@case("all_reduce_async")
def _(rank, world):
    x = values(rank, 1000, torch.float32)
    dist.all_reduce(x, async_op=True).wait()
    return x


@case("all_reduce_non_contiguous")
def _(rank, world):
    x = values(rank, 12, torch.float32).reshape(3, 4).t()
    dist.all_reduce(x)
    return x


@case("all_reduce_complex")
def _(rank, world):
    x = torch.complex(values(rank, 5, torch.float32), values(rank, 5, torch.float32, salt=1))
    dist.all_reduce(x)
    return x


@case("broadcast_every_dtype")
def _(rank, world):
    out = []
    for dtype in DTYPES:
        x = values(rank, 9, dtype)
        dist.broadcast(x, src=world - 1)
        out.append(x)
    return out


@case("broadcast_non_contiguous", truth=lambda rank, world: values(0, 12, torch.int64).reshape(3, 4)[:, 1:3])
def _(rank, world):
    x = values(rank, 12, torch.int64).reshape(3, 4)[:, 1:3]
    dist.broadcast(x, src=0)
    return x


@case("all_gather")
def _(rank, world):
    parts = [torch.zeros(3, dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(parts, values(rank, 3, torch.uint8))
    return parts


@case("all_gather_into_tensor")
def _(rank, world):
    out = torch.zeros(world * 4, dtype=torch.bfloat16)
    dist.all_gather_into_tensor(out, values(rank, 4, torch.bfloat16))
    return out


@case("reduce_scatter")
def _(rank, world):
    out = torch.zeros(2, dtype=torch.int32)
    dist.reduce_scatter(out, [values(rank, 2, torch.int32, salt=q) for q in range(world)], op=dist.ReduceOp.MAX)
    return out


@case("reduce_scatter_tensor")
def _(rank, world):
    out = torch.zeros(3)
    dist.reduce_scatter_tensor(out, values(rank, 3 * world, torch.float32))
    return out


def premul_truth(n, factor, salt=0):
    """The right answer of a PREMUL_SUM of every rank's values(rank, n) (gloo has no PREMUL_SUM)."""
    return lambda rank, world: factor * sum(values(q, n, torch.float32, salt) for q in range(world))


@case("all_reduce_premul_sum", truth=premul_truth(5, 0.25))
def _(rank, world):
    x = values(rank, 5, torch.float32)
    dist.all_reduce(x, op=dist._make_nccl_premul_sum(0.25))  # ReduceOp.PREMUL_SUM(f) on newer torches
    return x


@case("reduce_scatter_tensor_premul_sum",
      truth=lambda rank, world: premul_truth(3 * world, 0.5)(rank, world)[3 * rank:3 * rank + 3])
def _(rank, world):
    out = torch.zeros(3)
    dist.reduce_scatter_tensor(out, values(rank, 3 * world, torch.float32), op=dist._make_nccl_premul_sum(0.5))
    return out


@case("reduce")
def _(rank, world):
    x, y = values(rank, 6, torch.float32), values(rank, 6, torch.int64)
    dist.reduce(x, dst=world - 1)
    dist.reduce(y, dst=0, op=dist.ReduceOp.MAX)
    return [x if rank == world - 1 else None, y if rank == 0 else None]  # non-roots: unspecified


@case("gather")
def _(rank, world):
    parts = [torch.zeros(4) for _ in range(world)] if rank == 0 else None
    dist.gather(values(rank, 4, torch.float32), parts, dst=0)
    return parts


@case("scatter")
def _(rank, world):
    out = torch.zeros(3, dtype=torch.int64)
    parts = [values(q, 3, torch.int64, salt=7) for q in range(world)] if rank == world - 1 else None
    dist.scatter(out, parts, src=world - 1)
    return out


@case("all_to_all_single")
def _(rank, world):
    out = torch.zeros(2 * world)
    dist.all_to_all_single(out, torch.arange(2 * world, dtype=torch.float32) + 100 * rank)
    return out


@case("all_to_all_single_uneven")
def _(rank, world):
    send = [q + 1 for q in range(world)]              # rank sends q+1 rows to q
    recv = [rank + 1] * world                         # and gets rank+1 rows from each
    x = torch.arange(sum(send) * 2, dtype=torch.int32).reshape(-1, 2) + 1000 * rank
    out = torch.zeros(sum(recv), 2, dtype=torch.int32)
    dist.all_to_all_single(out, x, output_split_sizes=recv, input_split_sizes=send)
    return out


@case("all_to_all")
def _(rank, world):
    ins = [torch.full((q + 1,), float(rank * 10 + q)) for q in range(world)]
    outs = [torch.zeros(rank + 1) for _ in range(world)]
    dist.all_to_all(outs, ins)
    return outs


@case("barrier")
def _(rank, world):
    dist.barrier()
    return True


@case("monitored_barrier")
def _(rank, world):
    dist.monitored_barrier(timeout=timedelta(seconds=30))
    return True


@case("all_gather_object")
def _(rank, world):
    out = [None] * world
    dist.all_gather_object(out, {"rank": rank, "name": f"run-{rank}", "loss": [1.5 * rank]})
    return out


@case("broadcast_object_list")
def _(rank, world):
    objs = [{"config": "lr=0.1", "seed": 42}, "text"] if rank == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    return objs


@case("gather_object")
def _(rank, world):
    out = [None] * world if rank == 0 else None
    dist.gather_object(("metric", rank), out, dst=0)
    return out


@case("scatter_object_list")
def _(rank, world):
    out = [None]
    dist.scatter_object_list(out, [f"shard-{q}" for q in range(world)] if rank == 0 else None, src=0)
    return out


@case("world")
def _(rank, world):
    return [dist.get_rank(), dist.get_world_size(), dist.get_process_group_ranks(dist.group.WORLD)]


@case("new_group_whole_world")
def _(rank, world):
    group = dist.new_group(ranks=list(range(world)))
    x = values(rank, 4, torch.int64)
    dist.all_reduce(x, group=group)
    return [x, dist.get_process_group_ranks(group), group.size()]


@case("new_group_subset")
def _(rank, world):
    """The ranks after 0 (group rank = global rank - 1): collectives, objects and messages inside."""
    members = list(range(1, world))
    return inside(dist.new_group(ranks=members), members, rank)


@case("split_group")
def _(rank, world):
    """The world split into its even and its odd ranks, each in reverse order (group rank 0 is the
    highest), and the same calls inside each."""
    splits = [[r for r in reversed(range(world)) if r % 2 == parity] for parity in (0, 1)]
    splits = [s for s in splits if s]
    members = next(s for s in splits if rank in s)
    return inside(dist.split_group(split_ranks=splits), members, rank)


def inside(group, members, rank):
    """Collectives, objects and messages on a group of some ranks (members, in group rank order)."""
    x, y = values(rank, 4, torch.float32), values(rank, 3, torch.int64, salt=5)
    objs, got = [None] * len(members), torch.zeros(2)
    if rank in members:
        dist.all_reduce(x, group=group)
        dist.broadcast(y, group_src=len(members) - 1, group=group)
        dist.all_gather_object(objs, {"from": rank}, group=group)
        me, n = dist.get_group_rank(group, rank), len(members)
        works = [dist.isend(torch.full((2,), float(rank)), group_dst=(me + 1) % n, group=group),
                 dist.irecv(got, group_src=(me - 1) % n, group=group)] if n > 1 else []
        for w in works:
            w.wait()
    return [x, y, objs, got, dist.get_process_group_ranks(group) if rank in members else None]


@case("dcp_save_load")
def _(rank, world):
    import torch.distributed.checkpoint as dcp
    where = os.path.join(os.environ["CONFORMANCE_DIR"], f"dcp-{dist.get_backend()}")
    state = {"w": torch.arange(6.0) + rank, "step": torch.tensor(rank)}
    dcp.save(state, checkpoint_id=where)
    back = {"w": torch.zeros(6), "step": torch.tensor(-1)}
    dcp.load(back, checkpoint_id=where)
    return [back["w"], back["step"]]


@case("dtensor")
def _(rank, world):
    """A DeviceMesh of the world and DTensors on it: sharded from one tensor (scatter), resharded on the
    other dimension and gathered whole (all-gathers), and partial sums made whole (an allreduce)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (world,))
    d = distribute_tensor(values(0, 42, torch.float32).reshape(7, 6), mesh, [Shard(0)])
    partial = DTensor.from_local(values(rank, 5, torch.float32), mesh, [Partial()])
    return [d.to_local(), d.redistribute(mesh, [Shard(1)]).to_local(), d.full_tensor(), partial.full_tensor()]


@case("dcp_sharded_save_load")
def _(rank, world):
    """A DTensor sharded over the world saved with DCP (each rank writes its shard) and loaded back."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (world,))
    where = os.path.join(os.environ["CONFORMANCE_DIR"], f"dcp-sharded-{dist.get_backend()}")
    dcp.save({"w": distribute_tensor(values(1, 21, torch.float32).reshape(7, 3), mesh, [Shard(0)])},
             checkpoint_id=where)
    back = {"w": distribute_tensor(torch.zeros(7, 3), mesh, [Shard(0)])}
    dcp.load(back, checkpoint_id=where)
    return [back["w"].to_local(), back["w"].full_tensor()]


@case("fsdp2")
def _(rank, world):
    """FSDP2 (fully_shard on a DeviceMesh of the world): two training steps on rank-dependent inputs, the
    parameters gathered whole afterwards."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    for layer in (model[0], model[2], model):
        fully_shard(layer, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        model(values(rank, 24, torch.float32, salt=step).reshape(4, 6)).sum().backward()
        opt.step()
        opt.zero_grad()
    return [p.full_tensor() for p in model.parameters()]


@case("send_recv")
def _(rank, world):
    x = values(rank, 5, torch.float32)
    got = torch.zeros(5)
    if rank % 2 == 0:
        dist.send(x, dst=(rank + 1) % world)
        dist.recv(got, src=(rank - 1) % world)
    else:
        dist.recv(got, src=(rank - 1) % world)
        dist.send(x, dst=(rank + 1) % world)
    return got


@case("isend_irecv")
def _(rank, world):
    got = torch.zeros(5)
    works = [dist.isend(values(rank, 5, torch.float32), dst=(rank + 1) % world),
             dist.irecv(got, src=(rank - 1) % world)]
    for w in works:
        w.wait()
    return got


@case("batch_isend_irecv")
def _(rank, world):
    got = torch.zeros(5)
    ops = [dist.P2POp(dist.isend, values(rank, 5, torch.float32), (rank + 1) % world),
           dist.P2POp(dist.irecv, got, (rank - 1) % world)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    return got


@case("ddp_without_elastic_state")  # last: a refusal inside backward() leaves this DDP half done
def _(rank, world):
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step in range(2):
        opt.zero_grad()
        model(values(rank, 8, torch.float32, salt=step).reshape(2, 4)).sum().backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


# ---- one rank ----

def run_all():
    out = {}
    for name, fn in CASES:
        try:
            out[name] = ("ok", fn(dist.get_rank(), dist.get_world_size()))
        except Exception as e:  # noqa: BLE001 (a refusal is an answer to record)
            out[name] = ("refused", f"{type(e).__name__}: {e}".splitlines()[0][:300])
    return out


def same(a, b):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.is_floating_point() or a.is_complex():
            try:
                torch.testing.assert_close(a, b)
                return True
            except AssertionError:
                return False
        return torch.equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def verdict(name, gloo, ours, truth, dist_rank, world):
    if truth is not None:
        if ours[0] != "ok" or not same(ours[1], truth):
            return f"FAIL: ftl {ours[1]!r} is not the right answer {truth!r}"
        return "equal" if gloo[0] == "ok" and same(gloo[1], truth) else f"right; gloo's answer is not: {gloo[1]!r}"
    if gloo[0] == "refused":
        return "both refuse" if ours[0] == "refused" else "gloo refuses, ftl answers"
    if name in GAPS and GAP_ON.get(name, lambda r, w: True)(dist_rank, world):
        if ours[0] == "ok":
            return "FAIL: ftl answers a case listed in GAPS; take it off the list"
        return "gap" if "ftl:" in ours[1] else f"FAIL: refused without ftl's sentence: {ours[1]}"
    if ours[0] == "refused" and TORCH_REFUSES.get(name, "\0") in ours[1]:
        return f"gap of torch {torch.__version__}: {ours[1]}"
    if ours[0] == "refused":
        return f"FAIL: ftl refuses where gloo answers: {ours[1]}"
    return "equal" if same(gloo[1], ours[1]) else f"FAIL: ftl {ours[1]!r} != gloo {gloo[1]!r}"


def rank_main(index, world, gloo_port, ftl_ports, run_dir):
    """This process's run of the matrix, ftl first: the view gives ranks in join order, and gloo then takes
    the same rank, so that both runs give each rank the same inputs."""
    import ftl
    import ftl.torch
    agent = ftl.Agent(name=f"c{index}", bind=f"127.0.0.1:{ftl_ports[index]}", seeds=f"127.0.0.1:{ftl_ports[0]}",
                      insecure=1, run_dir=os.path.join(run_dir, f"r{index}"), min_workers=world, settle_ms=100,
                      log_level=os.environ.get("CONFORMANCE_LOG", "warn"), collective_timeout_ms=30000)
    ftl.torch.init_process_group(agent)
    with agent:
        agent.execute(lambda info: None)  # the first view: every rank
        rank = dist.get_rank()
        ours = run_all()
    dist.destroy_process_group()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{gloo_port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    gloo = run_all()
    dist.destroy_process_group()
    failed = 0
    for name, _ in CASES:
        truth = TRUTHS[name](rank, world) if name in TRUTHS else None
        v = verdict(name, gloo[name], ours[name], truth, rank, world)
        failed += v.startswith("FAIL")
        print(json.dumps({"rank": rank, "world": world, "case": name, "verdict": v,
                          **({"ftl": ours[name][1]} if ours[name][0] == "refused" else {})}), flush=True)
    return 1 if failed else 0


def free_ports(k):
    """k loopback ports, none handed out twice (tests/agent/cluster.py: below the ephemeral range)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
    from cluster import free_port
    return [free_port() for _ in range(k)]


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--rank":
        rank, world, gloo_port = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        try:
            sys.exit(rank_main(rank, world, gloo_port, [int(p) for p in sys.argv[5].split(",")], sys.argv[6]))
        except Exception:  # noqa: BLE001 (the parent reports it)
            traceback.print_exc()
            sys.exit(2)
    world = int(sys.argv[1])
    ports = free_ports(world + 1)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ranks import outputs
    with tempfile.TemporaryDirectory() as run_dir:
        env = {**os.environ, "CONFORMANCE_DIR": run_dir}
        procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), str(world), str(ports[0]),
                                   ",".join(map(str, ports[1:])), run_dir], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for r in range(world)]
        codes = []
        for code, out in outputs(procs, 240):
            sys.stdout.write(out)
            codes.append(code)
    bad = [r for r, c in enumerate(codes) if c != 0]
    print(f"conformance at {world} ranks: " + ("every case equal to gloo, or a listed gap" if not bad else
                                               f"ranks {bad} found mismatches (FAIL lines above)"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
