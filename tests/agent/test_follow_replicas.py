"""`ftlctl follow-replicas` (issue 41 item 5): `kubectl scale` alone drives the job's maximum. A fake
Kubernetes API (http.server on loopback) serves a Deployment's scale subresource and checks the bearer
token; three ftl-train-example workers train with FTL_MAX_WORKERS=2, so one waits as a spare; a follower
runs beside a member (and one beside the spare, whose agent refuses `scale`). The promises:
- replicas 2: nothing changes (the maximum is 2 already; the third stays a spare);
- replicas 3: the follower raises the maximum to 3 and the spare becomes a member (a view of 3);
- replicas 2 again: the maximum stays 3 (raise only: a scale-down's pods leave by themselves);
- a wrong token: the follower says HTTP 403 and what RBAC is missing, once, and changes nothing;
- SIGTERM ends it with 0; the spare's follower took the refusal quietly (said once at most).
Under test_training.py's harness (hard limit, logs on failure):
    python3 test_follow_replicas.py --train PATH --ctl PATH [--limit S] raises_the_maximum_only"""

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

import test_training as tt
from cluster import _die_with_parent
from workers import is_step

NAMESPACE, DEPLOYMENT = "ftl-test", "ftl-worker"
SCALE_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{DEPLOYMENT}/scale"


class FakeApi:
    """The scale subresource of one Deployment, as the Kubernetes API serves it, behind a bearer token."""

    def __init__(self, token, replicas):
        self.token, self.replicas, self.gets, self.refused = token, replicas, 0, 0
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.headers.get("Authorization") != f"Bearer {api.token}":
                    api.refused += 1
                    return self.answer(403, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                             "reason": "Forbidden", "code": 403})
                if self.path != SCALE_PATH:
                    return self.answer(404, {"kind": "Status", "status": "Failure", "reason": "NotFound"})
                api.gets += 1
                self.answer(200, {"kind": "Scale", "apiVersion": "autoscaling/v1",
                                  "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE},
                                  "spec": {"replicas": api.replicas},
                                  "status": {"replicas": api.replicas, "selector": "app=ftl-worker"}})

            def answer(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Follower:
    """`ftlctl follow-replicas` beside one worker's agent, its output in <dir>/follow-<name>.log."""

    def __init__(self, job, worker, api, token_file):
        self.log = os.path.join(job.dir, f"follow-{worker.name}.log")
        env = {k: v for k, v in os.environ.items() if k != "FTL_SPARES"}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [job.ctl_bin, "--socket", worker.socket, "follow-replicas", "--api", api.url, "--deployment",
                 DEPLOYMENT, "--namespace", NAMESPACE, "--token-file", token_file, "--interval-ms", "200"],
                stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=_die_with_parent)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def lines(self, part):
        return [line for line in self.text().splitlines() if part in line]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def scenario_raises_the_maximum_only(train, ctl):
    built = subprocess.run([ctl, "follow-replicas", "--help"], capture_output=True, text=True, timeout=30)
    if built.returncode != 0 and "without libcurl" in built.stderr:
        raise tt.Skip("ftlctl was built without libcurl (no follow-replicas)")
    job = tt.new_job(train, ctl, FTL_STEPS=1000000, FTL_MAX_WORKERS=2, **tt.JOB)
    token_file = os.path.join(job.dir, "token")

    def write_token(token):  # whole or not at all, as the kubelet replaces a projected token
        with open(token_file + ".new", "w") as f:
            f.write(token + "\n")
        os.replace(token_file + ".new", token_file)

    write_token("good-token")
    api = FakeApi("good-token", replicas=2)
    followers = []
    try:
        for i in range(3):
            job.add(f"w{i}")
        job.wait("a step of 2 workers", lambda: any(r["world"] == 2 for r in job.records() if is_step(r)), 60)
        two = {r["worker"] for r in job.records() if is_step(r) and r["world"] == 2}
        member = job.agents[sorted(two)[0]]
        spare = next(w for w in job.workers() if w.name not in two)

        def view(w):
            return (job.status(w) or {}).get("view") or {}

        job.wait(f"{spare.name} waits as a spare of a view of 2", lambda: view(spare).get("max_workers") == 2, 30)
        followers = [Follower(job, member, api, token_file), Follower(job, spare, api, token_file)]
        beside_member = followers[0]

        def polls(n):
            at = api.gets
            job.wait(f"{n} more polls of the fake API", lambda: api.gets >= at + n, 30)

        # replicas 2: the maximum is 2 already
        polls(10)
        assert view(member).get("max_workers") == 2 and view(member).get("world_size") == 2, view(member)
        assert not beside_member.lines("becomes"), beside_member.text()
        print(f"replicas 2: the maximum stays 2 ({spare.name} waits as a spare)")

        # replicas 3: the spare is promoted
        api.replicas = 3
        changed_at = time.monotonic()
        said = job.wait("the follower raises the maximum", lambda: beside_member.lines(
            "replicas 3: the job's maximum becomes 3"), 30)
        job.wait("a step of 3 workers", lambda: any(r["world"] == 3 for r in job.records() if is_step(r)), 60)
        job.wait("a view of 3 on the member", lambda: view(member).get("world_size") == 3, 30)
        took = time.monotonic() - changed_at
        assert view(member)["max_workers"] == 3, view(member)
        print(f"replicas 3: the follower raised the maximum {said:.2f} s after the API's change; the view of 3 "
              f"trained {took:.2f} s after it")

        # replicas 2 again: raise only
        api.replicas = 2
        job.wait("the follower keeps the maximum", lambda: beside_member.lines(
            "replicas 2: the job's maximum stays 3"), 30)
        polls(10)
        assert view(member).get("max_workers") == 3 and view(member).get("world_size") == 3, view(member)
        print("replicas 2: the maximum stays 3 (raise only)")

        # a wrong token: HTTP 403, said once, nothing changes even though replicas 4 would raise it (set once
        # the 403 is seen: a poll that read the good token before the change must not see them)
        write_token("wrong-token")
        job.wait("the follower says 403", lambda: beside_member.lines("HTTP 403"), 30)
        api.replicas = 4
        at = api.refused
        job.wait("10 more polls refused", lambda: api.refused >= at + 10, 30)
        said = beside_member.lines("HTTP 403")
        assert len(said) == 1, f"the 403 is said once, not on every poll: {said}"
        assert "Role" in said[0] and "deployments/scale" in said[0], said[0]
        assert view(member).get("max_workers") == 3, view(member)
        print(f"wrong token: {said[0]}")

        for f in followers:
            assert f.proc.poll() is None, f"a follower exited: {f.text()}"
            f.proc.send_signal(signal.SIGTERM)
        for f in followers:
            code = f.proc.wait(timeout=30)
            assert code == 0, f"follow-replicas exited {code} after SIGTERM: {f.text()}"
        refusals = followers[1].lines("refused")
        assert len(refusals) <= 1, f"the spare's follower said the refusal more than once: {refusals}"
        print(f"SIGTERM: both followers exited 0; beside the spare: {refusals or 'no refusal (raised first)'}")
    except AssertionError:
        for f in followers:
            print(f"--- {f.log}\n{f.text()}")
        raise
    finally:
        for f in followers:
            f.close()
        api.close()


def main():
    return tt.main_of(globals(), limit=150)


if __name__ == "__main__":
    sys.exit(main())
