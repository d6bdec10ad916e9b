"""A hot spare on the same GPU takes over after kill -9 of the active worker (takeover.py says how), and
resumes from the newest checkpoint into device memory with the state that checkpoint recorded: its first
step starts at the checkpoint's step, from parameters whose digest equals both the digest of the file's
bytes and the digest the active worker printed after that step. Prints the timings as one JSON line.

Usage: test_hot_spare.py --train build/examples/ftl-train-cuda --ctl build/ctl/ftlctl [--comm nccl]
(--comm tcp with build/examples/ftl-train-example runs the same scenario without a GPU; that program has no
"start" line, so the resumed digest is then checked through the checkpoint's step only)."""

import argparse
import json
import sys

import takeover


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--comm", default="nccl", choices=("nccl", "tcp"))
    p.add_argument("--state-mb", type=int, default=16)
    args = p.parse_args()
    out = takeover.run(args.train, args.ctl, args.state_mb, comm=args.comm)
    print(json.dumps({"test": "hot_spare", **out}, sort_keys=True), flush=True)
    problems = []
    if out["checkpoint_step_read"] != out["checkpoint_step"]:
        problems.append("the checkpoint's header names another step than its file name")
    if out["spare_start_step"] != out["checkpoint_step"]:
        problems.append(f"the spare started at step {out['spare_start_step']}, the newest checkpoint is of "
                        f"step {out['checkpoint_step']}")
    if out["active_digest_at_checkpoint"] != out["checkpoint_digest"]:
        problems.append(f"the checkpoint's bytes digest to {out['checkpoint_digest']}, the active worker "
                        f"printed {out['active_digest_at_checkpoint']} after that step")
    if args.comm == "nccl" and out["spare_start_digest"] != out["checkpoint_digest"]:
        problems.append(f"the spare resumed device state with digest {out['spare_start_digest']}, the "
                        f"checkpoint holds {out['checkpoint_digest']}")
    for why in problems:
        print(f"FAIL: {why}", file=sys.stderr)
    print("FAIL" if problems else "PASS")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
