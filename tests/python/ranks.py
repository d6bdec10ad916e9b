"""Runs a test's worker processes to the end under one deadline: shared by the multi-process scripts
(conformance.py, subgroup_view_change.py), whose workers are this same file started again."""
import subprocess
import time


def outputs(procs, seconds):
    """[(exit code, stdout)] of every process, in order; one still running at the deadline is killed (its
    output so far is kept, with a line that says so)."""
    deadline, out = time.monotonic() + seconds, []
    for p in procs:
        try:
            text, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
            text = (text or "") + f"\nthis process did not finish in {seconds} s\n"
        out.append((p.returncode, text))
    return out
