"""What grows in an agent when a local client or a key holder does not play along (issue 24, item 9), as
helpers shared by test_settings.py's scenarios and scripts/hostile/growth.py: followers of the control
socket's events that never read, and a member flood by tests/agent/member_flood (a key holder gossiping
fake names)."""
import json
import os
import select
import socket
import subprocess
import time


def rss_mib(pid, field="VmRSS"):
    """The process's VmRSS (now) or VmHWM (peak) in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def follow_without_reading(sock, n):
    """n clients of the control socket at sock that ask for the event stream and never read it."""
    conns = []
    for _ in range(n):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.connect(sock)
        c.sendall(b'{"cmd":"events"}\n')
        conns.append(c)
    return conns


def read_to_the_end(conns, seconds):
    """Reads every follower until the agent closes it (bounded in time): (how many it closed, how many of
    those ended with the final line {"ok":false,"dropped":true,...})."""
    tails = {c: b"" for c in conns}
    still_open = set(conns)
    deadline = time.monotonic() + seconds
    while still_open and time.monotonic() < deadline:
        ready, _, _ = select.select(list(still_open), [], [], 0.2)
        for c in ready:
            try:
                data = c.recv(1 << 16)
            except OSError:
                data = b""
            if data:
                tails[c] = (tails[c] + data)[-4096:]
            else:
                still_open.discard(c)
    with_final_line = 0
    for c in conns:
        last = tails[c].rstrip(b"\n").rsplit(b"\n", 1)[-1]
        try:
            with_final_line += c not in still_open and json.loads(last).get("dropped") is True
        except ValueError:
            pass
    return len(conns) - len(still_open), with_final_line


def flood_members(flood_bin, port, key, names, rounds, prefix):
    """member_flood: alives of names prefix-0.. sealed with key, rounds times (each round news again)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FTL_")}
    env["FTL_GOSSIP_KEY"] = key
    subprocess.run([flood_bin, f"127.0.0.1:{port}", str(names), str(rounds), prefix], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
