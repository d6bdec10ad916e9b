"""Multi-process checkpoint tests: every worker of a job killed, a fresh set resumes from disk.
Real ftl-train-example workers with FTL_CHECKPOINT_DIR, judged from their JSON lines, their logs and the
checkpoint files themselves (read here independently of the C code, from the layout in train/checkpoint.h).
Same runner as test_training.py (its helpers, its time limit, its seed printing):
    python3 test_checkpoint_jobs.py --train PATH --ctl PATH [--limit S] SCENARIO"""

import ctypes
import glob
import hashlib
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))  # the job harness
import test_training as tt  # noqa: E402
from workers import digest_problems, final_groups  # noqa: E402

class XXH128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


_xxhash = ctypes.CDLL("libxxhash.so.0")
_xxhash.XXH3_128bits.restype = XXH128
_xxhash.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def checksum(kind, data):
    """The file's checksum: 1 BLAKE2b-256, 2 XXH3-128 in canonical (big-endian) form (libxxhash itself)."""
    if kind == 1:
        return hashlib.blake2b(data, digest_size=32).digest()
    h = _xxhash.XXH3_128bits(data, len(data))
    return struct.pack(">QQ", h.high64, h.low64)


def read_checkpoint(path):
    """{"step", "data_epoch", "sample_pos", "job_id", "buffers": {name: bytes}} of a file that verifies,
    else the reason it does not (a string)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 80:
        return "truncated"
    magic, version, n, step, view_epoch, data_epoch, pos, world, kind, save_len, job_id = struct.unpack_from(
        "<8sIIQQQQIIQQ", data)
    if magic != b"FTLCKPT\0" or version != 2 or kind not in (1, 2):
        return "bad magic, version or checksum kind"
    sum_len = 32 if kind == 1 else 16
    entries = [struct.unpack_from("<64sQ", data, 80 + 72 * i) for i in range(n)]
    off = 80 + 72 * n
    if len(data) != off + sum(size for _, size in entries) + save_len + sum_len:
        return "truncated or corrupt"
    if checksum(kind, data[:-sum_len]) != data[-sum_len:]:
        return "checksum mismatch"
    buffers = {}
    for name, size in entries:
        buffers[name.rstrip(b"\0").decode()] = data[off:off + size]
        off += size
    return dict(step=step, data_epoch=data_epoch, sample_pos=pos, job_id=job_id, buffers=buffers)


def digest_of(ckpt):
    """The example's state digest (train_softmax.c state_digest) of a checkpoint's parameters."""
    b = ckpt["buffers"]
    return hashlib.blake2b(b["params"] + b["momentum"], digest_size=16).hexdigest()[:16]


def checkpoints(d):
    return sorted(glob.glob(os.path.join(d, "ckpt-*.ftl")))


def temps(d):
    return glob.glob(os.path.join(d, ".ckpt-*.tmp-*"))


def ckpt_dir():
    d = tempfile.mkdtemp(prefix="ftl-ckpt-test-")
    print(f"checkpoint directory {d}")
    return d


def kill_all(job):
    for w in job.running():
        w.signal(signal.SIGKILL)
    job.wait_exit(10)


def log_of(job, name="w0"):
    return job.agents[name].log_text()


def resumed_step(job):
    """The step the job's rank 0 resumed at, from its log (None if it did not resume)."""
    for w in job.workers():
        m = re.search(r'msg="resuming from checkpoint at step (\d+)" file=(\S+)', w.log_text())
        if m:
            return int(m.group(1)), m.group(2)
    return None


def first_step_line(job):
    lines = [r for w in job.workers() for r in w.steps()]
    return min(lines, key=lambda r: (r["step"], r["t"])) if lines else None


def job_env(d, **extra):
    return {**tt.JOB, "FTL_CHECKPOINT_DIR": d, **extra}


def scenario_resume(train, ctl):
    """Kill every worker at a random step; a fresh set resumes at the newest checkpoint's step with its
    parameters (digest equal to the one the first run printed after that step) and the loss goes on from
    where it was; retention kept exactly FTL_CHECKPOINT_KEEP files."""
    d, every, keep, n = ckpt_dir(), 20, 3, 3
    # FTL_EXPECTED_WORKERS, not FTL_MIN_WORKERS=n: both make the job start as one view of n, but with a
    # minimum of n a worker whose finishing barrier is cut short by the others leaving waits out
    # FTL_BELOW_MIN_TIMEOUT_MS for a view it can never get (seen once in CI).
    env = job_env(d, FTL_CHECKPOINT_EVERY=every, FTL_CHECKPOINT_KEEP=keep, FTL_EXPECTED_WORKERS=n)
    first = tt.new_job(train, ctl, FTL_STEPS=400, **env)
    tt.start_job(first, n)
    at = tt.rng.randint(70, 130)
    first.wait_step(at, 40)
    # rank 0 writes a checkpoint on a thread of its own: the one of step 60 may still be on its way at step
    # 70 on a slow machine (TSan, once in CI), and a kill then would find two
    first.wait(f"{keep} durable checkpoints", lambda: len(checkpoints(d)) >= keep, 40)
    kill_all(first)
    print(f"kill -9 of all {n} workers after step {first.progress()}")
    files = checkpoints(d)
    assert len(files) == keep, f"expected exactly {keep} checkpoints (FTL_CHECKPOINT_KEEP), found {files}"
    newest = read_checkpoint(files[-1])
    assert isinstance(newest, dict), f"the newest checkpoint {files[-1]} does not verify: {newest}"
    s = newest["step"]
    groups, _ = final_groups(first.records())
    before = groups[s - 1][0]
    assert digest_of(newest) == before["digest"], \
        f"checkpoint of step {s}: digest {digest_of(newest)}, the job printed {before['digest']} after step {s - 1}"
    print(f"newest checkpoint: step {s}, digest {digest_of(newest)} = the digest after step {s - 1}")

    second = tt.new_job(train, ctl, FTL_STEPS=s + 40, **env)
    tt.start_job(second, n)
    assert resumed_step(second) is not None and resumed_step(second)[0] == s, \
        f"rank 0 did not log resuming at step {s}: {resumed_step(second)}"
    start = first_step_line(second)
    assert start["step"] == s, f"the fresh set's first step is {start['step']}, not the checkpoint's {s}"
    tt.finish(second)
    again, _ = final_groups(second.records())
    problems = digest_problems(again)
    assert not problems, "inconsistent steps after resuming:\n  " + "\n  ".join(problems[:10])
    assert min(again) == s and max(again) == s + 39, f"steps after resuming: {min(again)}..{max(again)}"
    recent = sum(groups[k][0]["loss"] for k in range(s - 10, s)) / 10
    print(f"resumed at step {s}: loss {again[s][0]['loss']:.4f} (before the kill: mean {recent:.4f} over steps "
          f"{s - 10}..{s - 1}; {groups[0][0]['loss']:.4f} at step 0)")
    if s in groups:  # same world, data, sampler position and parameters: the very same step
        assert (again[s][0]["digest"], again[s][0]["loss"]) == (groups[s][0]["digest"], groups[s][0]["loss"]), \
            f"step {s} after resuming differs from the first run's step {s}"
        print(f"step {s} after resuming is bit-identical to the first run's step {s} (loss and digest)")
    # A batch's loss is noisy (~10%); a restart from scratch would be back near the initial loss.
    assert abs(again[s][0]["loss"] - recent) < 0.35 * recent, "the loss did not continue from where it was"
    assert again[s][0]["loss"] < 0.7 * groups[0][0]["loss"], "the loss went back to its starting value"
    shutil.rmtree(d)


def scenario_corrupt(train, ctl):
    """Newest checkpoint truncated, the one before it with a byte flipped: both are skipped with a log
    line naming the file and the reason, and the third newest loads."""
    d = ckpt_dir()
    env = job_env(d, FTL_CHECKPOINT_EVERY=10, FTL_CHECKPOINT_KEEP=4, FTL_MIN_WORKERS=2)
    first = tt.new_job(train, ctl, FTL_STEPS=400, **env)
    tt.start_job(first, 2)
    first.wait("three checkpoints", lambda: len(checkpoints(d)) >= 3, 40)
    kill_all(first)
    files = checkpoints(d)
    truncated, flipped, good = files[-1], files[-2], files[-3]
    size = os.path.getsize(truncated)
    cut = tt.rng.randrange(size)
    os.truncate(truncated, cut)
    at = tt.rng.randrange(os.path.getsize(flipped))
    with open(flipped, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ (1 << tt.rng.randrange(8))]))
    print(f"truncated {os.path.basename(truncated)} to {cut} of {size} bytes; flipped a bit of byte {at} of "
          f"{os.path.basename(flipped)}")

    second = tt.new_job(train, ctl, FTL_STEPS=400, **env)
    tt.start_job(second, 2)
    text = "".join(w.log_text() for w in second.workers())
    for path, why in ((truncated, "truncated"), (flipped, "")):
        m = re.search(rf'msg="skipping checkpoint {re.escape(path)}: ([^"]*{why}[^"]*)"', text)
        assert m, f"no log line skipping {path} ({why or 'any reason'})"
        print(f"skipped {os.path.basename(path)}: {m.group(1)}")
    want = read_checkpoint(good)["step"]
    assert resumed_step(second) == (want, good), f"expected to resume from {good}: {resumed_step(second)}"
    assert first_step_line(second)["step"] == want
    print(f"resumed from {os.path.basename(good)} at step {want}")
    kill_all(second)
    shutil.rmtree(d)


def mount_tmpfs(d, size):
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], capture_output=True, text=True)
    return r.returncode == 0


def scenario_write_fails(train, ctl):
    """A write that fails (a tiny tmpfs that fills, or, where mounting is not allowed, a file size limit)
    is reported in the log and by ftlctl status; training goes on; the checkpoint written before is intact
    and a fresh set resumes from it."""
    d = ckpt_dir()
    env = job_env(d, FTL_CHECKPOINT_EVERY=10, FTL_CHECKPOINT_KEEP=3, FTL_MIN_WORKERS=2, FTL_EXTRA_STATE_MB=1)
    # One checkpoint is ~1.05 MB: the tmpfs holds one, and the next one's temp fills it.
    mounted = mount_tmpfs(d, "1600k")
    try:
        job = tt.new_job(train, ctl, FTL_STEPS=1000, **env)
        tt.start_job(job, 2)
        job.wait("the first checkpoint", lambda: checkpoints(d), 30)
        if not mounted:
            print("cannot mount a tmpfs here: limiting the file size (RLIMIT_FSIZE) of a fresh set instead")
            kill_all(job)
            job = tt.new_job(train, ctl, FTL_STEPS=1000, **env)
            old = resource.getrlimit(resource.RLIMIT_FSIZE), signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (512 << 10, old[0][1]))  # inherited by the workers
            try:
                tt.start_job(job, 2)
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, old[0])
                signal.signal(signal.SIGXFSZ, old[1])
        kept = checkpoints(d)
        kept_bytes = [open(p, "rb").read() for p in kept]
        kept_step = read_checkpoint(kept[-1])["step"]
        failing_from = job.progress()
        job.wait("two failed checkpoint writes", lambda: log_of(job).count("msg=\"checkpoint of step") >= 2, 30)
        job.wait_step(failing_from + 25, 30)  # training goes on
        m = re.search(r'msg="(checkpoint of step \d+ failed: [^"]*)"', log_of(job))
        print(f"rank 0 logged: {m.group(1)}")
        if mounted:  # room for one checkpoint, not two: the message gives the sizes and the free space
            assert re.search(r"no room for the checkpoint of step \d+ in .*: it needs 1\.\d MiB, the file system "
                             r"has \d+\.\d MiB free beside the 1 checkpoint\(s\) already there", m.group(1)), m.group(1)
        else:
            assert "File too large" in m.group(1)
        status = job.status(job.agents["w0"])["checkpoint"]
        print(f"ftlctl status: writer {status['writer']!r}, written {status['written']}, failed {status['failed']}")
        assert status["writer"].startswith("failed: ") and status["failed"] >= 2
        assert checkpoints(d) == kept and not temps(d), f"files after the failures: {os.listdir(d)}"
        assert [open(p, "rb").read() for p in kept] == kept_bytes, "a checkpoint written before the failures changed"
        kill_all(job)
        again = tt.new_job(train, ctl, FTL_STEPS=1000, **env)
        tt.start_job(again, 2)
        assert resumed_step(again) == (kept_step, kept[-1]), f"did not resume from {kept[-1]}: {resumed_step(again)}"
        print(f"the checkpoint of step {kept_step} is intact and a fresh set resumed from it")
        kill_all(again)
    finally:
        for job in tt.jobs:
            job.close()
        if mounted:
            subprocess.run(["umount", d])
    shutil.rmtree(d)


def scenario_crash_mid_write(train, ctl):
    """kill -9 of every worker while rank 0's writer is in the middle of a (64 MB) checkpoint: every file
    under a checkpoint name verifies, the unfinished temp does not and is never loaded; a fresh set removes
    it and resumes from the newest finished checkpoint."""
    d = ckpt_dir()
    env = job_env(d, FTL_CHECKPOINT_EVERY=1, FTL_CHECKPOINT_KEEP=2, FTL_MIN_WORKERS=2, FTL_EXTRA_STATE_MB=64)
    first = tt.new_job(train, ctl, FTL_STEPS=100000, **env)
    tt.start_job(first, 2)
    first.wait("a checkpoint, and the next one being written", lambda: checkpoints(d) and temps(d), 30)
    kill_all(first)
    partial = temps(d)
    print(f"kill -9 of both workers with {len(partial)} temp file(s) in the directory, after step "
          f"{first.progress()}")
    files = checkpoints(d)
    for path in files:
        ok = read_checkpoint(path)
        assert isinstance(ok, dict), f"{path} is under a finished name but does not verify: {ok}"
    for path in partial:
        assert not isinstance(read_checkpoint(path), dict), f"the unfinished {path} verifies"
        print(f"unfinished {os.path.basename(path)}: {os.path.getsize(path)} bytes, "
              f"{read_checkpoint(path)}")
    assert len(files) <= 3, f"retention (2) let {len(files)} files stay"
    newest = read_checkpoint(files[-1])["step"]
    second = tt.new_job(train, ctl, FTL_STEPS=100000, **env)
    tt.start_job(second, 2)
    assert resumed_step(second) == (newest, files[-1]), f"did not resume from {files[-1]}: {resumed_step(second)}"
    if partial:
        assert "unfinished checkpoint temp file" in log_of(second)
    print(f"every finished checkpoint verifies; a fresh set resumed from step {newest}")
    kill_all(second)
    shutil.rmtree(d)


def snapshot(d):
    """{file name: bytes} of every finished checkpoint in d."""
    return {os.path.basename(p): open(p, "rb").read() for p in checkpoints(d)}


def job_with_checkpoints(train, ctl, d, env, count):
    """A first job that trains until `count` checkpoints exist, then is killed: the files to protect."""
    first = tt.new_job(train, ctl, FTL_STEPS=100000, **env)
    tt.start_job(first, 2)
    first.wait(f"{count} checkpoints", lambda: len(checkpoints(d)) >= count, 40)
    kill_all(first)
    return snapshot(d)


def expect_stop(train, ctl, env, says):
    """Starts 2 workers over the checkpoints: every worker exits 1 without a single step, and rank 0's
    error (the one that stopped it) contains each of `says`. Rank 1 stops too, but how depends on the view
    rules once rank 0 is gone (no quorum without it): its waits are bounded short here."""
    job = tt.new_job(train, ctl, FTL_STEPS=100000, **{**env, "FTL_MAX_RETRIES": 2, "FTL_BELOW_MIN_TIMEOUT_MS": 5000})
    for i in range(2):
        job.add(f"w{i}")
    codes = job.wait_exit(45)
    steps = [r["step"] for w in job.workers() for r in w.steps()]
    assert not steps, f"the job trained (steps {steps[:5]}...) instead of stopping"
    assert all(c == 1 for c in codes.values()), f"exit codes {codes}, expected 1 from every worker"
    text = "".join(w.log_text() for w in job.workers())
    m = re.search(r"train_softmax: w\d: (ftl: cannot resume: [^\n]*)", text)
    assert m, "no worker exited with the 'cannot resume' error"
    for part in says:
        assert part in m.group(1), f"{part!r} is not in the error: {m.group(1)}"
    print(f"every worker exited 1 without a step: {m.group(1)}")


def scenario_shape_mismatch_stops_and_keeps_files(train, ctl):
    """The program registers one more buffer than the checkpoints hold: the job stops with an error that
    names the directory, the newest file, what differs and FTL_CHECKPOINT_FRESH; no file changes. With
    FTL_CHECKPOINT_FRESH=1 it starts from step 0 and writes and rotates its own files, past
    FTL_CHECKPOINT_KEEP, without deleting or altering one of the old job's."""
    d = ckpt_dir()
    env = job_env(d, FTL_CHECKPOINT_EVERY=10, FTL_CHECKPOINT_KEEP=3, FTL_MIN_WORKERS=1)
    old = job_with_checkpoints(train, ctl, d, env, 3)
    newest = sorted(old)[-1]
    print(f"the old job's checkpoints: {sorted(old)}")
    bigger = {**env, "FTL_EXTRA_STATE_MB": 1}  # registers "ballast" too: 3 buffers, the files hold 2
    expect_stop(train, ctl, bigger, [f"FTL_CHECKPOINT_DIR={d}", newest,
                                     "shape mismatch: 2 buffers in the file, 3 registered", "FTL_CHECKPOINT_FRESH=1"])
    assert snapshot(d) == old, f"the checkpoints changed: {sorted(snapshot(d))}"

    fresh = tt.new_job(train, ctl, FTL_STEPS=100000, FTL_CHECKPOINT_FRESH=1, **bigger)
    tt.start_job(fresh, 2)
    assert first_step_line(fresh)["step"] == 0, "FTL_CHECKPOINT_FRESH=1 did not start from step 0"
    assert "starting from the initial state as FTL_CHECKPOINT_FRESH=1 asks" in log_of(fresh)
    mine = lambda: sorted(set(snapshot(d)) - set(old))
    fresh.wait("5 checkpoints of the fresh job (FTL_CHECKPOINT_KEEP=3)",
               lambda: fresh.progress() >= 51 and len(mine()) == 3, 40)
    kill_all(fresh)
    now = snapshot(d)
    assert {k: now.get(k) for k in old} == old, "a checkpoint of the old job was deleted or altered"
    ids = {read_checkpoint(os.path.join(d, k))["job_id"] for k in mine()}
    old_ids = {read_checkpoint(os.path.join(d, k))["job_id"] for k in old}
    assert len(ids) == 1 and not ids & old_ids, f"job ids: fresh {ids}, old {old_ids}"
    print(f"FTL_CHECKPOINT_FRESH=1 trained to step {fresh.progress()}, kept its newest {mine()}, and left the "
          f"old job's {len(old)} files as they were")
    shutil.rmtree(d)


def scenario_all_corrupt_stops(train, ctl):
    """Every checkpoint fails to verify (a bit flipped in each): the job stops with an error naming the
    directory, the newest file, the reason and FTL_CHECKPOINT_FRESH; no file is deleted."""
    d = ckpt_dir()
    env = job_env(d, FTL_CHECKPOINT_EVERY=10, FTL_CHECKPOINT_KEEP=3, FTL_MIN_WORKERS=1)
    job_with_checkpoints(train, ctl, d, env, 3)
    for path in checkpoints(d):
        at = tt.rng.randrange(200, os.path.getsize(path))
        with open(path, "r+b") as f:
            f.seek(at)
            b = f.read(1)
            f.seek(at)
            f.write(bytes([b[0] ^ (1 << tt.rng.randrange(8))]))
        print(f"flipped a bit of byte {at} of {os.path.basename(path)}")
    corrupt = snapshot(d)
    expect_stop(train, ctl, env, [f"FTL_CHECKPOINT_DIR={d}", sorted(corrupt)[-1], "checksum mismatch",
                                  "FTL_CHECKPOINT_FRESH=1"])
    assert snapshot(d) == corrupt, "the corrupt checkpoints changed"
    shutil.rmtree(d)


def leave_all(how):
    """Makes every worker of a job leave the way `how` says, all at once (a scale to zero)."""
    def run(job):
        for w in job.running():
            if how == "sigterm":
                w.signal(signal.SIGTERM)
            else:
                subprocess.Popen([job.ctl_bin, "--socket", w.socket, "leave"], stdout=subprocess.DEVNULL)
    return run


def written_on_leave(train, ctl, how):
    """Scale to zero with no checkpoint due (FTL_CHECKPOINT_EVERY far away): rank 0 writes one of the very
    step it reached before it exits 0, with the parameters it printed, and a fresh set resumes there."""
    d = ckpt_dir()
    env = job_env(d, FTL_CHECKPOINT_EVERY=1000000, FTL_MIN_WORKERS=2)
    job = tt.new_job(train, ctl, FTL_STEPS=100000, **env)
    tt.start_job(job, 2)
    job.wait_step(tt.rng.randint(20, 60), 30)
    assert not checkpoints(d)
    leave_all(how)(job)
    codes = job.wait_exit(40)
    assert all(c == 0 for c in codes.values()), f"exit codes after leaving: {codes}"
    files = checkpoints(d)
    assert len(files) == 1, f"expected rank 0's final checkpoint, found {files}"
    ckpt = read_checkpoint(files[0])
    assert isinstance(ckpt, dict), f"the final checkpoint does not verify: {ckpt}"
    w0 = job.agents["w0"]
    last = w0.steps()[-1]
    assert ckpt["step"] == last["step"] + 1, f"checkpoint of step {ckpt['step']}, w0's last step was {last['step']}"
    assert digest_of(ckpt) == last["digest"], "the final checkpoint is not the state w0 printed last"
    assert "final checkpoint durable before leaving" in w0.log_text()
    print(f"{how}: rank 0 wrote the checkpoint of step {ckpt['step']} (its last step + 1, digest {last['digest']}) "
          f"and every worker exited 0")
    again = tt.new_job(train, ctl, FTL_STEPS=100000, **env)
    tt.start_job(again, 2)
    assert resumed_step(again) == (ckpt["step"], files[0]), f"did not resume from {files[0]}: {resumed_step(again)}"
    kill_all(again)
    shutil.rmtree(d)


def scenario_written_on_leave(train, ctl):
    """`ftlctl leave` on every worker (a Kubernetes preStop of a scale to zero)."""
    written_on_leave(train, ctl, "ftlctl")


def scenario_written_on_sigterm(train, ctl):
    """SIGTERM to every worker at once."""
    written_on_leave(train, ctl, "sigterm")


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("scenario_"):
            setattr(tt, "scenario_ckpt_" + name[len("scenario_"):], fn)
    sys.exit(tt.main())
