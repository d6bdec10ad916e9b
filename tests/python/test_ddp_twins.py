"""The examples' plain DDP twins (examples/torch_*_ddp.py) still run: two gloo ranks under torchrun for a
few steps, every step's parameter digest equal on both ranks, both ranks' final lines; and the HSDP twin
(examples/torch_char_gpt_hsdp_torchrun.py), 2 replicas of 2, each shard's digest equal on both replicas. The twins are what
examples/README.md diffs the ftl programs against; without a test they would rot unseen.

Run by ctest as python_ddp_twins; by hand: python -m pytest tests/python/test_ddp_twins.py"""
import glob
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
from workers import digest_problems, final_groups  # noqa: E402

STEPS = 5
SMALL = {"char_gpt": {"FTL_WIDTH": "32", "FTL_DEPTH": "1", "FTL_CONTEXT": "32"},
         "resnet_digits": {"FTL_WIDTH": "8", "FTL_DEPTH": "1"}}


@pytest.mark.parametrize("example", sorted(SMALL))
def test_ddp_twin_trains_with_two_gloo_ranks_in_step(example, tmp_path):
    env = {**os.environ, **SMALL[example], "FTL_STEPS": str(STEPS), "OMP_NUM_THREADS": "1"}
    program = os.path.join(EXAMPLES, f"torch_{example}_ddp.py")
    # --redirects 1: each rank's stdout in a file of its own (on one pipe their lines interleave mid-line)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "--log-dir", str(tmp_path), "--redirects", "1", program],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr[-3000:]}"
    outs = glob.glob(os.path.join(tmp_path, "**", "stdout.log"), recursive=True)
    assert len(outs) == 2, f"stdout files: {outs}"
    records = [json.loads(line) for out in outs for line in open(out) if line.startswith("{")]
    groups, _ = final_groups(records)
    assert sorted(groups) == list(range(STEPS)), f"steps reported: {sorted(groups)}"
    assert all(len(g) == 2 for g in groups.values()), "a step was not reported by both ranks"
    assert not digest_problems(groups), digest_problems(groups)
    finals = [r for r in records if r.get("final")]
    assert len(finals) == 2 and finals[0]["digest"] == finals[1]["digest"], finals
    assert finals[0]["test_loss"] > 0 and finals[0]["steps"] == STEPS


def test_hsdp_twin_trains_with_two_replicas_of_two_gloo_ranks(tmp_path):
    """examples/torch_char_gpt_hsdp_torchrun.py: FSDP2 over a 2 x 2 mesh under torchrun; each shard's digest
    equal on both replicas after every step."""
    env = {**os.environ, **SMALL["char_gpt"], "FTL_STEPS": str(STEPS), "OMP_NUM_THREADS": "1",
           "FTL_REPLICA_SIZE": "2"}
    program = os.path.join(EXAMPLES, "torch_char_gpt_hsdp_torchrun.py")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
                           "--log-dir", str(tmp_path), "--redirects", "1", program],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr[-3000:]}"
    records = [json.loads(line) for out in glob.glob(os.path.join(tmp_path, "**", "stdout.log"), recursive=True)
               for line in open(out) if line.startswith("{")]
    groups, _ = final_groups(records)
    assert sorted(groups) == list(range(STEPS)) and all(len(g) == 4 for g in groups.values()), sorted(groups)
    assert {r["shard"] for r in records if "shard" in r} == {0, 1}
    assert not digest_problems(groups), digest_problems(groups)
    assert len({r["digest"] for g in groups.values() for r in g if r["step"] == STEPS - 1}) == 2  # one per shard
