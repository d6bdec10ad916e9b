#!/usr/bin/env python3
"""Item 8 of issue 24, as an attack: settings that make a worker train alone by mistake.

A seed list with no seed in it (FTL_SEEDS=,,,) and 13 misspelled FTL_* names (FTL_SEED, FTL_MIN_WORKER,
...) are each given to a real worker (ftl-train-example) and to ftl-agent; each must be refused at start
(exit 2) with a message naming the variable (and, for a misspelling, the closest known name), instead of
a worker that trains alone and exits 0. Prints one line, `item 8: held|broken — <figures>`; exit 0 when
held. Stdlib only; loopback only; well under a minute."""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "agent"))
from test_settings import MISSPELLED, SEED_LISTS_WITHOUT_A_SEED, base_env  # noqa: E402


def refused(cmd, env, *needles):
    try:
        r = subprocess.run([cmd], env=env, capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return False  # it started and ran (a refusal exits at once)
    return r.returncode == 2 and all(n in r.stderr for n in needles)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build", help="the build folder (ftl-agent, ftl-train-example)")
    a = p.parse_args()
    agent = os.path.join(a.build, "agent", "ftl-agent")
    train = os.path.join(a.build, "examples", "ftl-train-example")
    with tempfile.TemporaryDirectory(prefix="ftl-settings-") as d:
        seeds_ok = sum(refused(prog, dict(base_env(d), FTL_SEEDS=seeds, FTL_STEPS="5"), "FTL_SEEDS")
                       for seeds in SEED_LISTS_WITHOUT_A_SEED for prog in (agent, train))
        seeds_all = 2 * len(SEED_LISTS_WITHOUT_A_SEED)
        typos_ok = sum(refused(train, dict(base_env(d), FTL_STEPS="5", **{typo: "2"}), typo, closest)
                       for typo, closest in MISSPELLED)
    held = seeds_ok == seeds_all and typos_ok == len(MISSPELLED)
    print(f"item 8: {'held' if held else 'broken'} — {seeds_ok}/{seeds_all} seed lists with no seed and "
          f"{typos_ok}/{len(MISSPELLED)} misspelled FTL_* names refused at start (exit 2, naming the variable "
          f"and the closest known name)")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
