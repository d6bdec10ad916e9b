"""The cost of agent.execute() from Python around a step that does nothing, on one worker with no
membership change: what the binding adds to every training step (ctypes call, the C step callback back
into Python, StepInfo). Compare with bench_execute_overhead (C). One JSON line per figure.

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/python/bench_execute_overhead.py [steps] [registered] [numpy|torch]

With `registered` > 0, that many small arrays (or torch tensors) are registered as state first (at most 64,
FTL_MAX_BUFFERS): execute() checks before every step that each tensor still lies where it was registered.
"""
import json
import socket
import sys
import tempfile
import time

import numpy as np

import ftl


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    registered = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if len(sys.argv) > 3 and sys.argv[3] == "torch":
        import torch
        state = [torch.zeros(16) for _ in range(registered)]
    else:
        state = [np.zeros(16, np.float32) for _ in range(registered)]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as run_dir, \
            ftl.Agent(name="bench", bind=f"127.0.0.1:{port}", insecure=1, run_dir=run_dir, log_level="warn") as agent:
        for i, x in enumerate(state):
            agent.register(f"state{i}", x)
        agent.execute(lambda info: None)  # the first view and communicator, not part of the figure
        start = time.perf_counter()
        for _ in range(steps):
            agent.execute(lambda info: None)
        took = time.perf_counter() - start
        print(json.dumps({"bench": "python_execute_overhead", "steps": steps, "registered": registered, "kind": type(state[0]).__module__.split(".")[0] if state else "-",
                          "figure": "overhead_us_per_step", "value": round(took / steps * 1e6, 3)}))


if __name__ == "__main__":
    main()
