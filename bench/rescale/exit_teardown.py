"""bench/rescale/exit_teardown: how long the kernel takes to close a process's sockets after kill -9, for a
bare Python process and for one that imported torch (issue 26, item 1).

Why it matters: every way a peer learns of a crash on one machine (a comm connection's EOF, the refused
connect of proof of death, a probe's missing ack) starts when the kernel closes the dead process's sockets,
and Linux closes them (exit_files) only after it has torn down the address space (exit_mm). A process
that imported torch maps gigabytes of libraries, and that teardown is the first tens of milliseconds of
every PyTorch worker's recovery, whatever ftl does. The child connects to us, we kill it and time the EOF.
One JSON line per kind: the median and range over --runs.

    PYTHONPATH=python/src python bench/rescale/exit_teardown.py [--runs 5]
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

KINDS = {"python": "pass", "import_torch": "import torch",
         "import_torch_1gb_tensor": "import torch; x = torch.ones(250_000_000)"}


def kill_to_eof_s(setup):
    """Seconds from SIGKILL of a child that ran `setup` to the EOF of its connection to us."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        child = subprocess.Popen([sys.executable, "-c", f"{setup}\nimport socket, time\n"
                                  f"s = socket.create_connection(('127.0.0.1', {port}))\ns.sendall(b'x')\n"
                                  "time.sleep(600)"])
        conn, _ = server.accept()
        with conn:
            conn.recv(1)
            time.sleep(0.3)  # settled: nothing of its start-up left running
            start = time.perf_counter()
            os.kill(child.pid, signal.SIGKILL)
            conn.recv(1)
            took = time.perf_counter() - start
        child.wait()
        return took


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    for kind, setup in KINDS.items():
        times = [kill_to_eof_s(setup) for _ in range(args.runs)]
        print(json.dumps({"bench": "exit_teardown", "kind": kind, "runs": args.runs,
                          "median_ms": round(statistics.median(times) * 1e3, 1),
                          "min_ms": round(min(times) * 1e3, 1), "max_ms": round(max(times) * 1e3, 1)}), flush=True)


if __name__ == "__main__":
    main()
