"""A hot spare taking over from a killed worker, on one machine: the scenario behind scripts/test-gpu.sh's
hot-spare test (test_hot_spare.py, which asserts) and the takeover benchmark (bench/nccl/takeover.py, which
times it with 100 MB and 1 GB of extra device state).

One active worker (FTL_MAX_WORKERS=1) trains and checkpoints; a second worker of the same job waits as a hot
spare; the active one is killed with SIGKILL. The spare detects the death, commits a view of itself, holds
no live state, resumes from the newest checkpoint into device memory and trains on. Should the spare wait
for a quorum instead (the strict majority of a one-member view is that member), the scenario does what an
operator does for a worker known to be gone: `ftlctl quorum reset` on the spare, and reports when.

Timestamps are wall-clock seconds (time.time(), the same clock as the workers' "t" fields), all relative to
the kill. Needs the program's JSON lines as examples/train_cuda.c writes them (the C example's work too,
without the "start" line)."""

import hashlib
import os
import shutil
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
from workers import TrainingJob  # noqa: E402

CKPT_FIXED_V2 = 80
CKPT_ENTRY = 72


def checkpoints(directory):
    """[(step, path)] of the finished checkpoint files, oldest first (names sort by step)."""
    names = sorted(n for n in os.listdir(directory) if n.startswith("ckpt-") and n.endswith(".ftl"))
    return [(int(n.split("-")[1]), os.path.join(directory, n)) for n in names]


def checkpoint_digest(path):
    """(step, digest) of a version-2 checkpoint: the examples' digest, the first 8 bytes of BLAKE2b-128
    over the "params" then the "momentum" buffer, in hex."""
    with open(path, "rb") as f:
        head = f.read(CKPT_FIXED_V2)
        if head[:7] != b"FTLCKPT" or struct.unpack_from("<I", head, 8)[0] != 2:
            raise ValueError(f"{path}: not a version-2 ftl checkpoint")
        n, step = struct.unpack_from("<I", head, 12)[0], struct.unpack_from("<Q", head, 16)[0]
        entries = f.read(n * CKPT_ENTRY)
        blobs = {}
        for i in range(n):
            name = entries[i * CKPT_ENTRY:i * CKPT_ENTRY + 64].rstrip(b"\0").decode()
            size = struct.unpack_from("<Q", entries, i * CKPT_ENTRY + 64)[0]
            if name in ("params", "momentum"):
                blobs[name] = f.read(size)
            else:
                f.seek(size, os.SEEK_CUR)
    h = hashlib.blake2b(blobs["params"] + blobs["momentum"], digest_size=16)
    return step, h.hexdigest()[:16]


def read_bandwidth(path):
    """Bytes per second reading path from disk: the page cache dropped first where this process may (root);
    else the figure is the page cache's (the result says which)."""
    is_cold = False
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        is_cold = True
    except OSError:
        pass
    start, total = time.monotonic(), 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(16 << 20):
            total += len(chunk)
    return total / max(time.monotonic() - start, 1e-9), is_cold


def _phase(job, worker):
    s = job.status(worker)
    return s["view"]["phase"] if s and isinstance(s.get("view"), dict) else None


def run(train_bin, ctl_bin, extra_mb, comm="nccl", every=100, timeout=300, is_measuring_disk=False):
    """Runs the scenario; returns what happened (a dict, times in seconds after the kill). With
    is_measuring_disk, also the disk's read bandwidth over the checkpoint (read_bandwidth: drops the page
    cache where it may, which slows everything else on the machine: benchmarks only)."""
    # Steps of 1 ms, nearer a real model's than the C example's bare 40 us, which write 25,000 JSON lines a
    # second for this test to read.
    job = TrainingJob(train_bin, ctl_bin, FTL_COMM=comm, FTL_MIN_WORKERS=1, FTL_MAX_WORKERS=1,
                      FTL_STEPS=10 ** 8, FTL_EXTRA_STATE_MB=extra_mb, FTL_CHECKPOINT_EVERY=every,
                      FTL_CHECKPOINT_KEEP=2, FTL_STEP_SLEEP_MS=1)
    ckdir = os.path.join(job.dir, "checkpoints")
    job.job_env["FTL_CHECKPOINT_DIR"] = ckdir
    try:
        job.add("active")
        job.wait("the active worker's first checkpoint", lambda: os.path.isdir(ckdir) and checkpoints(ckdir), timeout)
        spare = job.add("spare")
        job.wait("the second worker waits as a hot spare", lambda: _phase(job, spare) == "hot spare", 60)
        job.wait("a checkpoint written while the spare waits", lambda: len(checkpoints(ckdir)) >= 2, timeout)
        active = job.agents["active"]
        # A fixed target: the newest checkpoint as of now. Compared with the newest at each poll, the goal moved
        # as fast as the worker wrote, and a reader slower than the writer never reached it. The kill may
        # come after newer checkpoints; their lines are in the file too (the example prints and flushes a
        # step's line before the next ftl_execute snapshots the checkpoint).
        target = checkpoints(ckdir)[-1][0] - 1
        job.wait(f"the active worker's line of step {target}, which the newest checkpoint holds",
                 lambda: active.last_step() >= target, timeout)
        t_kill = time.time()
        job.kill("active")
        active.proc.wait()
        newest_step, newest_path = checkpoints(ckdir)[-1]
        kept = os.path.join(job.dir, "resumed-from.ftl")  # the spare's own checkpoints retire the file
        os.link(newest_path, kept)
        newest_path = kept
        out = {"state_mb": extra_mb, "checkpoint_step": newest_step, "checkpoint_bytes": os.path.getsize(newest_path)}
        out["detect_s"] = None

        def resumed():
            """True once the spare completed a step; notes when it saw the death, and waives a lost quorum."""
            phase = _phase(job, spare)
            if out["detect_s"] is None and phase not in (None, "hot spare"):
                out["detect_s"] = time.time() - t_kill
            if phase == "waiting for quorum" and "quorum_reset_s" not in out:
                r = job.ctl(spare, "quorum", "reset")
                if r.returncode != 0:
                    raise AssertionError(f"ftlctl quorum reset failed: {r.stdout}{r.stderr}")
                out["quorum_reset_s"] = time.time() - t_kill
            return any("loss" in r for r in spare.records())
        job.wait("the spare's first step", resumed, timeout)
        recs = spare.records()
        start = next((r for r in recs if r.get("event") == "start"), None)
        first = next(r for r in recs if "loss" in r)
        out["resume_s"] = start["t"] - t_kill if start else None
        out["first_step_s"] = first["t"] - t_kill
        out["spare_start_step"] = start["step"] if start else first["step"]
        out["spare_start_digest"] = start["digest"] if start else None
        out["spare_first_step_ms"] = first.get("step_ms")
        active_steps = {r["step"]: r["digest"] for r in active.records() if "loss" in r}
        out["active_last_step"] = max(active_steps, default=None)
        out["active_digest_at_checkpoint"] = active_steps.get(newest_step - 1)
        out["checkpoint_step_read"], out["checkpoint_digest"] = checkpoint_digest(newest_path)
        if is_measuring_disk:
            out["disk_read_bytes_per_s"], out["disk_read_cold"] = read_bandwidth(newest_path)
        return out
    finally:
        job.close()
        shutil.rmtree(job.dir, ignore_errors=True)
