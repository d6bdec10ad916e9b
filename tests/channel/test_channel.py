"""The peer channel on a real training job: rendezvous messages between workers travel over one
persistent TCP connection per peer, so through several views (a kill -9 and a join) each worker dials a
handful of connections while it sends many more frames; before persistent connections every frame was
its own connection. Under test_training.py's harness (hard limit, logs on failure):
    python3 test_channel.py --train PATH --ctl PATH [--limit S] SCENARIO"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))  # the job harness
import test_training as tt  # noqa: E402


def scenario_rendezvous_reuses_one_connection_per_peer(train, ctl):
    steps = 800
    job = tt.new_job(train, ctl, FTL_STEPS=steps, **tt.JOB)
    tt.start_job(job, 4)
    job.wait_step(40, 30)
    job.kill("w3")
    job.wait("a step with the 3 survivors", lambda: any(
        r["world"] == 3 for w in job.workers() if w.name != "w3" for r in w.steps()), 30)
    job.add("w4")
    job.wait("a step with w4", lambda: job.agents["w4"].steps(), 30)
    survivors = [w for w in job.running() if w.name in ("w0", "w1", "w2")]
    statuses = {w.name: job.status(w) for w in survivors}
    assert all(statuses.values()), f"a survivor did not answer ftlctl status: {list(statuses)}"
    counters = {name: s["counters"] for name, s in statuses.items()}
    tt.finish(job, [w for w in job.workers() if w.name != "w3"])
    names_seen = 5  # w0..w4: one connection each, and a second to the one that died, at most
    for name, c in counters.items():
        print(f"{name}: {c['peer_frames_sent']} rendezvous frames over {c['peer_dials']} connections "
              f"({c['peer_frames_dropped']} dropped)")
        assert 1 <= c["peer_dials"] <= 2 * names_seen, f"{name} dialled {c['peer_dials']} connections"
        assert c["peer_frames_dropped"] == 0, f"{name} dropped frames: {c}"
    sent = sum(c["peer_frames_sent"] for c in counters.values())
    dials = sum(c["peer_dials"] for c in counters.values())
    assert sent >= 2 * dials, f"{sent} frames over {dials} connections: connections are not reused"


if __name__ == "__main__":
    sys.exit(tt.main_of(globals()))
