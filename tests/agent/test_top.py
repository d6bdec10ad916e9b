"""`ftlctl top` on a real training job: under a real terminal (a tmux pane on a private tmux server: keys
sent, the pane captured) it is redrawn in place and shows a kill -9 as it happens (the world size drops,
the member turns dead, a recovery time appears); `top --once` prints one plain frame with a step rate.
Under test_training.py's harness (hard limit, logs on failure); skipped when tmux is not installed:
    python3 test_top.py --train PATH --ctl PATH [--limit S] SCENARIO"""

import os
import re
import shutil
import subprocess
import sys

import test_training as tt


class Pane:
    """A command in a detached tmux session on its own server (socket in the job's directory)."""

    def __init__(self, job, command, width=140, height=30):
        self.tmux = ["tmux", "-S", os.path.join(job.dir, "tmux.sock")]
        subprocess.run(self.tmux + ["new-session", "-d", "-s", "top", "-x", str(width), "-y", str(height),
                                    command], check=True, timeout=10)

    def text(self):
        r = subprocess.run(self.tmux + ["capture-pane", "-p", "-t", "top"], capture_output=True, text=True,
                           timeout=10)
        return r.stdout

    def keys(self, *keys):
        subprocess.run(self.tmux + ["send-keys", "-t", "top", *keys], check=True, timeout=10)

    def close(self):
        subprocess.run(self.tmux + ["kill-server"], capture_output=True, timeout=10)


def scenario_top_shows_a_kill_as_it_happens(train, ctl):
    if not shutil.which("tmux"):
        raise tt.Skip("tmux is not installed (Debian: apt-get install tmux)")
    job = tt.new_job(train, ctl, FTL_STEPS=1000000, **tt.JOB)
    tt.start_job(job, 3)
    w0 = job.agents["w0"]
    pane = Pane(job, f"{ctl} --socket {w0.socket} top")
    try:
        job.wait("top shows a world of 3 with a step rate",
                 lambda: "world size 3," in pane.text() and re.search(r"\d+\.\d steps/s", pane.text()), 15)
        first = pane.text()
        assert first.count("ftl top ") == 1, f"the frame is not redrawn in place:\n{first}"
        victim = job.workers()[tt.rng.randrange(1, 3)]
        job.kill(victim.name)
        print(f"kill -9 {victim.name}")
        row = re.compile(rf"^{victim.name}\s+\S+\s+dead\b", re.M)
        job.wait("top shows the world of 2, the dead member and a recovery time",
                 lambda: ("world size 2," in pane.text() and row.search(pane.text())
                          and "recovery     last " in pane.text()), 20)
        after = pane.text()
        assert after.count("ftl top ") == 1, f"the frame is not redrawn in place:\n{after}"
        print("the pane after the kill:\n" + "\n".join(line.rstrip() for line in after.splitlines() if line.strip()))
        pane.keys("C-c")
    finally:
        pane.close()
    once = subprocess.run([ctl, "--socket", w0.socket, "top", "--once"], capture_output=True, text=True, timeout=15)
    assert once.returncode == 0, once.stderr
    assert "\033" not in once.stdout, "top --once wrote terminal escapes"
    assert re.search(r"steps        step \d+, \d+\.\d steps/s", once.stdout), once.stdout


def main():
    return tt.main_of(globals(), limit=120)

if __name__ == "__main__":
    sys.exit(main())
