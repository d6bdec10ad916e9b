"""Takeover benchmark: kill -9 of the active worker -> the hot spare's first step on the GPU, with 100 MB and
1 GB of extra device state restored from a checkpoint (tests/gpu/takeover.py runs the scenario). One JSON
line per state size: detection (kill -> the spare sees the death), the quorum reset if the spare needed one
(takeover.py says when), resume (kill -> the spare's state restored into device memory), the first step,
the checkpoint's size and the disk's read bandwidth, and the target: detection + 2 s + size / bandwidth,
met or not.

Usage: takeover.py --train build/examples/ftl-train-cuda --ctl build/ctl/ftlctl [--state-mb 100 1024]"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu"))
import takeover  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--comm", default="nccl", choices=("nccl", "tcp"))
    p.add_argument("--state-mb", type=int, nargs="+", default=[100, 1024])
    args = p.parse_args()
    for mb in args.state_mb:
        out = takeover.run(args.train, args.ctl, mb, comm=args.comm, is_measuring_disk=True)
        read_s = out["checkpoint_bytes"] / out["disk_read_bytes_per_s"]
        target = out["detect_s"] + 2.0 + read_s
        figure = {
            "bench": "gpu_takeover", "comm": args.comm, "state_mb": mb, "checkpoint_bytes": out["checkpoint_bytes"],
            "detect_s": round(out["detect_s"], 3), "quorum_reset_s": out.get("quorum_reset_s"),
            "resume_s": round(out["resume_s"], 3) if out["resume_s"] is not None else None,
            "first_step_s": round(out["first_step_s"], 3), "first_step_ms": out["spare_first_step_ms"],
            "disk_read_gb_per_s": round(out["disk_read_bytes_per_s"] / 1e9, 3),
            "disk_read_cold": out["disk_read_cold"], "target_s": round(target, 3),
            "is_within_target": out["first_step_s"] <= target,
        }
        print(json.dumps(figure), flush=True)


if __name__ == "__main__":
    main()
