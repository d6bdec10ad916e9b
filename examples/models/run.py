"""The parts of a training program that do not depend on the model: settings from FTL_* names, the
per-step loss statistics, the JSON lines tests/agent/workers.py reads, a state digest, the data stream of a
loop that counts steps, and the exit status.

Why shared: the ftl programs and their DDP twins must print the same lines and compute the same loss,
so that tests and bench/torch/example_convergence.py judge them alike, and the twins' diff shows ftl only.
Where ftl's group and plain torch.distributed differ (which step counts; ftl's errors as exit statuses)
these functions ask which one the program runs on, so that both twins call them alike."""
import hashlib
import io
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


def setting(var, fallback, cast=int):
    """The FTL_* variable as a number, else fallback; exit 2 when it is not one."""
    value = os.environ.get(var, "")
    try:
        return cast(value) if value else fallback
    except ValueError:
        print(f"{os.path.basename(sys.argv[0])}: {var}={value}: expected a number", file=sys.stderr)
        sys.exit(2)


def worker_name():
    return os.environ.get("FTL_NAME") or f"{socket.gethostname()}-{os.environ.get('RANK', os.getpid())}"


def loss_and_stats(logits, y):
    """The loss to run backward() on (the mean over this rank's targets) and [loss sum, correct, targets],
    to be summed over the ranks. Logits (..., classes), targets (...): a class per image or per character."""
    logits, y = logits.flatten(0, -2), y.flatten()
    loss = F.cross_entropy(logits, y, reduction="sum")
    stats = torch.tensor([loss.item(), (logits.argmax(1) == y).sum().item(), y.numel()], dtype=torch.float64)
    return loss / max(y.numel(), 1), stats


def pause():
    """FTL_STEP_SLEEP_MS of extra time per step: tests stretch a run so that a kill lands in the middle."""
    time.sleep(setting("FTL_STEP_SLEEP_MS", 0) / 1000)


def emit(record):
    record["t"] = round(time.time(), 3)
    print(json.dumps(record, separators=(",", ":")), flush=True)


_printed = None  # on ftl's group: the committed step printed last (ftl.torch.last_commit())


def committed(step):
    """(step, rank, world size, view) of the step the loop just trained, or None when it does not count. On
    plain torch.distributed: the loop's own step, in the one world (view 1). On ftl's group (loop mode): the
    step that committed last, numbered, ranked and sized in the view it committed in; None when it is the
    one printed before, since loop mode dropped this step (it lost a peer) and its batch comes again."""
    global _printed
    if dist.get_backend() != "ftl":
        return step, dist.get_rank(), dist.get_world_size(), 1
    import ftl.torch
    info = ftl.torch.last_commit()
    if info is None or info is _printed:
        return None
    _printed = info
    return info.step, info.rank, info.world_size, info.view_epoch


def print_step(name, step, stats, digest, shard=None):
    """The line of a step that counts (committed(step)); stats: the step's [loss sum, correct, targets] over
    every rank. shard: a sharded model's index in its replica, whose digest is that shard's (equal on the
    same index of every replica, tests/agent/workers.py checks)."""
    where = committed(step)
    if where is None:
        return
    step, rank, world, epoch = where
    n = stats[2].item()
    emit({"worker": name, "step": step, "rank": rank, "world": world, "epoch": epoch, "samples": int(n),
          "loss": round(stats[0].item() / max(n, 1), 6), "accuracy": round(stats[1].item() / max(n, 1), 6),
          "digest": digest, **({} if shard is None else {"shard": shard})})


def print_final(name, steps, model, held_out, digest, chunk=256, shard=None):
    """The final line: loss and accuracy on the held-out split (every rank computes the same). shard: as
    print_step's. A sharded model's evaluation gathers its parameters: in loop mode it runs in the job's
    step after the last, which never commits, and a peer lost there raises PeerLostError (after the loop of
    ftl.torch.steps(n) nothing is left to drop a wrong result); the digest, taken before, stays right."""
    model.eval()
    total = torch.zeros(3, dtype=torch.float64)
    with torch.no_grad():
        for start in range(0, len(held_out), chunk):
            x, y = held_out[start:start + chunk]
            total += loss_and_stats(model(x), y)[1]
    emit({"worker": name, "final": True, "steps": steps, "test_loss": round(total[0].item() / total[2].item(), 6),
          "test_accuracy": round(total[1].item() / total[2].item(), 6), "digest": digest,
          **({} if shard is None else {"shard": shard})})


def digest(model, optimizer):
    """16 hex digits of a BLAKE2b hash of the model's and the optimizer's state dicts as torch.save writes
    them: equal on every rank after every step when the ranks are in step (the optimizer's moments and
    learning rate too, which the parameters alone would show only later)."""
    return _hash({"model": model.state_dict(), "optimizer": optimizer.state_dict()})


def shard_digest(model, optimizer):
    """digest() of a sharded model (FSDP2's DTensors): of this rank's shards of the parameters and of the
    optimizer's state, in order; equal on the same shard of every replica."""
    def local(t):
        return t.to_local() if hasattr(t, "to_local") else t
    params = [local(p.detach()) for p in model.parameters()]
    state = [local(v) if torch.is_tensor(v) else v for p in model.parameters()
             for _, v in sorted(optimizer.state.get(p, {}).items())]
    return _hash({"params": params, "optimizer": state})


def _hash(obj):
    """16 hex digits of BLAKE2b over obj as torch.save writes it."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    return hashlib.blake2b(buf.getvalue(), digest_size=8).hexdigest()


def exit_status(main):
    """main()'s return value, and ftl's errors as exit statuses: 2 for a bad FTL_* setting, 1 when training
    cannot go on (the reason on stderr), 0 when this worker left the job (`ftlctl leave`: a Kubernetes
    preStop hook; or a spare whose job's state is gone, its workers having left at the end). The plain DDP
    twins raise none of them; any other exception is raised on."""
    program = os.path.basename(sys.argv[0])
    try:
        return main()
    except Exception as e:
        ftl = sys.modules.get("ftl")
        if ftl is None or not isinstance(e, ftl.Error):
            raise
        if isinstance(e, ftl.ConfigError):
            print(f"{program}: {e}", file=sys.stderr)
            return 2
        import ftl.torch
        try:
            left = ftl.torch.agent().has_left
        except ftl.Error:  # before init_process_group
            left = False
        if left:
            why = e if e.code == ftl.errors.STATE_LOST else "ftlctl leave"
            print(f"{program}: left the job ({why})", file=sys.stderr)
            return 0
        print(f"{program}: {e}", file=sys.stderr)
        return 1


def forever(loader, sampler):
    """The loader's batches, epoch after epoch, each epoch in a new order (set_epoch): the data stream of a
    loop that counts steps. With ftl's ElasticSampler a joiner's stream passes the data epochs the job has
    finished (their iterations are empty) and starts at the job's position."""
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1
