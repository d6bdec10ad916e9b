"""The ftl demo: an elastic training job on this machine, through a crash and a scale-up.

Starts 4 ftl-train-example workers on loopback (a fresh cluster key from `ftlctl keygen`, one port each,
a private run directory), kills one with kill -9 partway, starts a new one later, shows `ftlctl status`
once while the job runs, and prints the job's progress and a summary. Exit status 0 only if every
surviving worker finished and, after every step, every rank held the same parameters (the digests of
the JSON lines, see train_softmax.c). Start it with scripts/demo.sh, which builds what it needs.

With --torch the workers run examples/torch_digits.py instead (PyTorch, an MLP on scikit-learn's digits,
with this Python), which prints the same JSON lines.

The processes are managed by the same harness the multi-process tests use (tests/agent/workers.py)."""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "agent"))
from workers import TrainingJob, digest_problems, final_groups  # noqa: E402


def say(text):
    print(text, flush=True)


class Demo:
    def __init__(self, args):
        self.args = args
        job_env = dict(FTL_STEPS=args.steps, FTL_STEP_SLEEP_MS=args.step_ms, FTL_LOG_LEVEL="warn")
        if args.torch:  # a Python worker takes seconds to start: the first ones wait for the others
            job_env["FTL_EXPECTED_WORKERS"] = args.workers
        self.job = TrainingJob(program(args), args.ctl, **job_env)
        self.printed = -1          # the last step reported on
        self.world = None          # the world size in the last step seen
        self.started = time.monotonic()
        self.status_shown = False

    def elapsed(self):
        return time.monotonic() - self.started

    def start(self):
        model = "a PyTorch MLP on scikit-learn's digits" if self.args.torch else "softmax regression"
        say(f"ftl demo: {self.args.workers} workers on 127.0.0.1, {self.args.steps} steps of {model} "
            f"(run directory {self.job.dir})")
        say("  cluster key: a fresh one from `ftlctl keygen` (every packet is sealed with it)")
        for i in range(self.args.workers):
            w = self.job.add(f"w{i}")
            say(f"  started {w.name} (pid {w.proc.pid}, gossip {w.addr})")

    def report(self):
        """Prints a line every --every steps, and one whenever the world size changes."""
        groups, _ = final_groups(self.job.records())
        for step in range(self.printed + 1, max(groups, default=-1) + 1):
            r = groups[step][0] if step in groups else None
            if r is None:
                return  # a step not reported yet: come back for it
            if r["world"] != self.world:
                if self.world is not None:
                    say(f"  >> view {r['epoch']}: world {self.world} -> {r['world']} from step {step} "
                        f"({self.elapsed():.1f} s)")
                self.world = r["world"]
            if step % self.args.every == 0 or step == self.args.steps - 1:
                say(f"step {step:4d}  world {r['world']}  view {r['epoch']:3d}  loss {r['loss']:.4f}  "
                    f"batch accuracy {r['accuracy']:.3f}")
            self.printed = step

    def show_status(self):
        w = self.job.running()[0]
        r = subprocess.run([self.args.ctl, "--socket", w.socket, "status"], capture_output=True, text=True,
                           timeout=10)
        say(f"  >> ftlctl status (asking {w.name}):")
        for line in (r.stdout or r.stderr).rstrip().splitlines():
            say(f"     {line}".rstrip())
        self.status_shown = True

    def run(self, deadline):
        killed = joined = False
        while any(w.is_running() for w in self.job.workers()):
            if self.elapsed() > deadline:
                raise RuntimeError(f"the job did not finish in {deadline} s")
            self.report()
            step = self.job.progress()
            if not killed and step >= self.args.kill_at:
                victim = self.job.agents[self.args.victim]
                victim.signal(signal.SIGKILL)
                say(f"  >> kill -9 {victim.name} (pid {victim.proc.pid}) after step {step} ({self.elapsed():.1f} s)")
                killed = True
            if not joined and step >= self.args.join_at:
                w = self.job.add(f"w{self.args.workers}")
                say(f"  >> started {w.name} (pid {w.proc.pid}) after step {step}: it joins the running job")
                joined = True
            if killed and not self.status_shown and step >= (self.args.kill_at + self.args.join_at) // 2:
                self.show_status()
            time.sleep(0.05)
        self.report()

    def summary(self):
        victim = self.args.victim
        finishers = [w for w in self.job.workers() if w.name != victim]
        codes = self.job.exit_codes(finishers)
        groups, superseded = final_groups(self.job.records())
        problems = digest_problems(groups)
        finals = {w.name: w.final() for w in finishers}
        digests = {n: f["digest"] for n, f in finals.items() if f}
        views = []
        for g in groups.values():
            if not views or views[-1][0] != g[0]["epoch"]:
                views.append((g[0]["epoch"], g[0]["world"]))
        last = groups[max(groups)][0] if groups else None
        is_complete = len(groups) == self.args.steps and all(c == 0 for c in codes.values()) and \
            len(digests) == len(finishers)
        is_equal = not problems and len(set(digests.values())) == 1
        say("summary")
        say(f"  views trained in (epoch: world): {', '.join(f'{e}: {n}' for e, n in views)}")
        say(f"  steps: {len(groups)} of {self.args.steps} in {self.elapsed():.1f} s; "
            f"worker exit codes: {codes} ({victim} was killed)")
        test_accuracy = next((f["test_accuracy"] for f in finals.values() if f), None)
        if last and test_accuracy is not None:
            say(f"  final loss {last['loss']:.4f} (training batch); test accuracy {test_accuracy:.3f} "
                f"(held-out split)")
        say(f"  parameter digests equal on all ranks after every step: {'yes' if is_equal else 'NO'} "
            f"(final: {', '.join(f'{n} {d}' for n, d in digests.items())})")
        for p in problems[:5]:
            say(f"    {p}")
        return is_complete and is_equal


def program(args):
    """The workers' command: ftl-train-example, or the PyTorch example with this Python."""
    if args.torch:
        return [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_digits.py")]
    return args.train


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", help="the ftl-train-example binary (not needed with --torch)")
    p.add_argument("--torch", action="store_true", help="run examples/torch_digits.py (PyTorch) instead")
    p.add_argument("--ctl", required=True, help="the ftlctl binary")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--step-ms", type=int, help="pretend compute per step (FTL_STEP_SLEEP_MS; default 50, 100 with "
                   "--torch, so the joiner, which imports torch first, arrives while the job runs)")
    p.add_argument("--kill-at", type=int, default=100, help="kill -9 a worker after this step")
    p.add_argument("--victim", default="w2")
    p.add_argument("--join-at", type=int, help="start a new worker after this step (default 200; 150 with "
                   "--torch, whose worker takes seconds to start)")
    p.add_argument("--every", type=int, default=20, help="print progress every this many steps")
    p.add_argument("--deadline", type=int, default=150, help="give up after this many seconds")
    args = p.parse_args()
    if not args.torch and not args.train:
        p.error("--train is needed (or --torch)")
    if args.join_at is None:
        args.join_at = 150 if args.torch else 200
    if args.step_ms is None:
        args.step_ms = 100 if args.torch else 50
    for var in ("FTL_GOSSIP_KEY", "FTL_GOSSIP_KEY_FILE", "FTL_INSECURE", "FTL_SEEDS", "FTL_ADVERTISE", "FTL_NAME"):
        os.environ.pop(var, None)
    demo = Demo(args)
    ok = False
    try:
        demo.start()
        demo.run(args.deadline)
        ok = demo.summary()
    except (RuntimeError, AssertionError, KeyboardInterrupt) as e:
        say(f"demo failed: {e}")
        for w in demo.job.workers():
            tail = w.log_text().splitlines()[-3:]
            say(f"  {w.name} (exit {w.proc.poll()}): " + " | ".join(tail))
    finally:
        demo.job.close()
    if ok:
        shutil.rmtree(demo.job.dir, ignore_errors=True)
    else:
        say(f"logs kept in {demo.job.dir}")
    say("demo: OK" if ok else "demo: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
