#!/usr/bin/env python3
"""Items 1 and 2 of the hostile-neighbour run (scripts/hostile.sh): a joiner with one more registered
buffer, and a stray lineage with a higher epoch and fewer steps, against a local job of ftl-train-example
workers. Runs the regression scenarios of tests/agent/test_wrong_peers.py and prints one line per item:
`item N: held|broken — <figure>`; exit 0 when every item held."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ITEMS = {1: "joiner_with_other_state_is_refused_alone", 2: "stray_lineage_never_rolls_the_job_back"}


def run(build, item):
    cmd = [sys.executable, os.path.join(ROOT, "tests", "agent", "test_wrong_peers.py"),
           "--train", os.path.join(build, "examples", "ftl-train-example"), "--ctl", os.path.join(build, "ctl", "ftlctl"),
           "--limit", "100", ITEMS[item]]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    figure = next((l[len("FIGURE: "):] for l in out.splitlines() if l.startswith("FIGURE: ")), None)
    failed = next((l for l in out.splitlines() if l.startswith("FAIL ")), None)
    held = figure is not None and failed is None
    print(f"item {item}: {'held' if held else 'broken'} — {figure if held else (failed or out[-300:])}", flush=True)
    return held


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build folder")
    p.add_argument("items", nargs="*", type=int, default=sorted(ITEMS))
    args = p.parse_args()
    results = [run(os.path.abspath(args.build), i) for i in args.items]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
