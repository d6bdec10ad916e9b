"""ftlrun --join: more workers for a job that another ftlrun of yours runs on this machine, with one flag.

Why: joining by hand takes the running job's seeds, its gossip key (a fresh one lives in the first
launcher's memory only) and names no worker holds; a launcher started without them trains a job of its
own, and one that reuses a name is never let in. So every launcher records its job where a later one
finds it: a file per launcher, <its pid>.json, in a directory of yours alone ($FTLRUN_JOBS_DIR, else
$XDG_RUNTIME_DIR/ftlrun, else /tmp/ftlrun-<uid>; mode 700, refused if anyone else can write it), holding
the workers' addresses, where the key is (the memfd's /proc/<pid>/fd/N path, or your key file), the job's
FTL_* settings and its program. The file goes when the launcher exits; a launcher killed with SIGKILL
leaves it, and a record whose launcher is gone is skipped (and removed). The key is never written: the
record says where to read it, and only you can.

A joining launcher takes the seeds, the key and the settings (your own environment's FTL_* win), names its
workers <the job's prefix>-j<its pid>-<i> (free: pids are unique among running launchers), and runs the
job's program unless given one.
"""
import json
import os
import stat
import tempfile

from ._run_key import Refusal

# Not passed on: each worker's own, the key (never written down), and what the joiner sets itself.
NOT_RECORDED = ("FTL_NAME", "FTL_BIND", "FTL_ADVERTISE", "FTL_CUDA_DEVICE", "FTL_SEEDS", "FTL_RUN_DIR",
                "FTL_GOSSIP_KEY", "FTL_GOSSIP_KEY_FILE", "FTL_METRICS_ADDR")


def jobs_dir():
    """The directory of job records, made private if new; refused when another user could write it."""
    path = (os.environ.get("FTLRUN_JOBS_DIR") or
            (os.path.join(os.environ["XDG_RUNTIME_DIR"], "ftlrun") if os.environ.get("XDG_RUNTIME_DIR") else
             os.path.join(tempfile.gettempdir(), f"ftlrun-{os.geteuid()}")))
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Refusal(f"{path}, where ftlrun records its jobs, is not a directory of yours alone (mode 700): "
                      f"remove it, or set FTLRUN_JOBS_DIR to one")
    return path


def record(plan, job_id):
    """Writes this launcher's job record; returns its path (the caller removes it at exit). job_id: the pid
    of the launcher that started the job (this one, unless it joined)."""
    env = plan.envs[0]
    settings = {k: v for k, v in env.items() if k.startswith("FTL_") and k not in NOT_RECORDED}
    entry = {"pid": os.getpid(), "job": job_id, "seeds": plan.addrs[:8], "key_file": plan.key_for_others,
             "name_prefix": plan.names[0].rsplit("-", 1)[0], "command": plan.command, "settings": settings}
    path = os.path.join(jobs_dir(), f"{os.getpid()}.json")
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(entry, f)
    os.replace(path + ".tmp", path)
    return path


def _is_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process took the pid: not our launcher
        return False


def running_jobs():
    """The records of launchers still running, oldest first; those of dead ones are removed."""
    d = jobs_dir()
    found = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(d, name)
        try:
            with open(path) as f:
                entry = json.load(f)
        except (OSError, ValueError):
            continue
        if _is_alive(int(entry.get("pid", 0))):
            found.append(entry)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
    return found


def chosen_job(wanted):
    """The job to join: the one running (whichever of its launchers), or the launcher pid `wanted` names
    (--job)."""
    jobs = running_jobs()
    if wanted:
        match = [j for j in jobs if str(j["pid"]) == wanted]
        if not match:
            raise Refusal(f"--job {wanted}: no running ftlrun of yours has that pid "
                          f"({'running: ' + ', '.join(str(j['pid']) for j in jobs) if jobs else 'none runs'})")
        return match[0]
    if not jobs:
        raise Refusal(f"--join: no ftlrun of yours runs a job on this machine (their records are in {jobs_dir()}); "
                      "start the job first, or give --seeds and --key-file to join one elsewhere")
    ids = {j["job"] for j in jobs}
    if len(ids) > 1:
        listed = "; ".join(f"{j['pid']}: {' '.join(j['command'])}" for j in jobs if j["pid"] in ids)
        raise Refusal(f"--join: {len(ids)} ftlrun jobs of yours run here ({listed}): say which, --job PID")
    return jobs[0]


def apply(args, env):
    """Fills args and env from the job that --join names, before the plan is made."""
    job = chosen_job(args.job)
    if args.seeds is None:
        args.seeds = ",".join(job["seeds"])
    has_key = args.key_file or env.get("FTL_GOSSIP_KEY_FILE") or env.get("FTL_GOSSIP_KEY")
    if job["key_file"] and not has_key:
        args.key_file = job["key_file"]
    elif not job["key_file"] and not has_key and job["settings"].get("FTL_INSECURE") != "1":
        raise Refusal(f"--join: the job of ftlrun {job['pid']} took its gossip key from FTL_GOSSIP_KEY, which is "
                      "not written anywhere: set the same FTL_GOSSIP_KEY here")
    for k, v in job["settings"].items():
        env.setdefault(k, v)
    if not args.name_prefix_given:
        args.name_prefix = f"{job['name_prefix']}-j{os.getpid()}"
    if not args.program:  # the job's own program, as its launcher ran it
        args.no_python, args.module = True, False
        args.program, args.args = job["command"][0], job["command"][1:]
        env.setdefault("PYTHONUNBUFFERED", "1")
    return job
