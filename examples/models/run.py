"""The parts of a training program that do not depend on the model or on ftl: settings from FTL_* names,
the per-step loss statistics, the JSON lines tests/agent/workers.py reads, and a state digest.

Why shared: the ftl programs and their DDP twins must print the same lines and compute the same loss,
so that tests and bench/torch/example_convergence.py judge them alike, and the twins' diff shows ftl only."""
import hashlib
import io
import json
import os
import socket
import sys
import time

import torch
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


def print_step(name, step, rank, world, epoch, stats, digest):
    """A completed step's line; stats: the step's [loss sum, correct, targets] over every rank."""
    n = stats[2].item()
    emit({"worker": name, "step": step, "rank": rank, "world": world, "epoch": epoch, "samples": int(n),
          "loss": round(stats[0].item() / max(n, 1), 6), "accuracy": round(stats[1].item() / max(n, 1), 6),
          "digest": digest})


def print_final(name, steps, model, held_out, digest, chunk=256):
    """The final line: loss and accuracy on the held-out split (every rank computes the same)."""
    model.eval()
    total = torch.zeros(3, dtype=torch.float64)
    with torch.no_grad():
        for start in range(0, len(held_out), chunk):
            x, y = held_out[start:start + chunk]
            total += loss_and_stats(model(x), y)[1]
    emit({"worker": name, "final": True, "steps": steps, "test_loss": round(total[0].item() / total[2].item(), 6),
          "test_accuracy": round(total[1].item() / total[2].item(), 6), "digest": digest})


def digest(model, optimizer):
    """16 hex digits of a BLAKE2b hash of the model's and the optimizer's state dicts as torch.save writes
    them: equal on every rank after every step when the ranks are in step (the optimizer's moments and
    learning rate too, which the parameters alone would show only later)."""
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buf)
    return hashlib.blake2b(buf.getvalue(), digest_size=8).hexdigest()


def forever(loader, sampler):
    """The loader's batches, epoch after epoch, each epoch in a new order (DistributedSampler.set_epoch):
    the plain DDP programs' data stream. The ftl programs get each step's samples from ftl's sampler."""
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1
