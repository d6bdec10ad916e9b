"""Misuses of the Python API that segfaulted (issue 24, item 6) end in a Python exception with a sentence,
or are made harmless: each scenario (crash_scenarios.py) runs in a process of its own, so a crash fails
its test instead of the run."""
import os
import subprocess
import sys

import pytest

from crash_scenarios import SCENARIOS

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_misuse_is_refused_not_a_crash(name):
    p = subprocess.run([sys.executable, os.path.join(HERE, "crash_scenarios.py"), name], capture_output=True,
                       text=True, timeout=90)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    assert p.returncode == 0, f"{name} exited with status {p.returncode} (negative: killed by that signal):\n" \
                              f"{p.stdout[-2000:]}{p.stderr[-3000:]}"
    assert last.startswith(("refused: ", "survived: ")), last
