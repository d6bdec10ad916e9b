"""/metrics on real ftl-train-example workers (loopback): scraped over HTTP while they train and after a
kill -9, read with a strict exposition parser (exposition.py) and `promtool check metrics` when promtool
is installed; bad requests answered with 400/405/404/413 while serving goes on; a bad FTL_METRICS_ADDR
refused by name. One scenario per run, under test_training.py's harness (hard limit, logs on failure):
    python3 test_metrics.py --train PATH --ctl PATH [--limit S] SCENARIO"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import exposition
import re
import test_training as tt
import urllib.parse
from cluster import _die_with_parent, free_port, wait_until

STEPS = 1000000  # the job never finishes by itself: close() kills it
K8S = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "k8s")


def metrics_env(name):
    return {"FTL_METRICS_ADDR": f"127.0.0.1:{free_port()}"}


def scrape(w):
    """The worker's /metrics, checked: {family: exposition.Family}."""
    status, headers, text = exposition.scrape(w.env["FTL_METRICS_ADDR"])
    assert status == 200, f"{w.name}: GET /metrics gave {status}: {text}"
    assert headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"), headers
    families = exposition.parse(text)
    lint = exposition.promtool_check(text)
    if lint:
        print(f"promtool on {w.name}'s metrics: {lint}")
    return families


def value(families, name, **labels):
    return families[name].value(**labels)


def histogram_count(families, name):
    return sum(v for _, v in families[name].series("_count"))


def scenario_scrape_while_training_and_after_kill9(train, ctl):
    """Three workers: the metrics parse, the world is 3 and steps grow; after a kill -9 the survivors show
    the view change by death, a world of 2, a recovery-time observation, and steps growing again."""
    job = tt.new_job(train, ctl, FTL_STEPS=STEPS, FTL_CHECKPOINT_EVERY=20, **tt.JOB)
    job.job_env["FTL_CHECKPOINT_DIR"] = os.path.join(job.dir, "checkpoints")  # the dashboard shows them
    tt.start_job(job, 3, env_of=metrics_env)
    print("promtool:", "installed, each scrape is checked" if exposition.promtool_check("") is not None
          else "not installed, the exposition parser alone checks the format")
    for w in job.workers():
        job.wait(f"{w.name} reports a world of 3", lambda: value(scrape(w), "ftl_view_world_size") == 3, 20)
    first = {w.name: value(scrape(w), "ftl_training_steps_total") for w in job.workers()}
    time.sleep(1)
    for w in job.workers():
        m = scrape(w)
        assert value(m, "ftl_training_steps_total") > first[w.name], f"{w.name}: steps did not grow"
        assert value(m, "ftl_members", state="alive") == 3
        assert value(m, "ftl_view_phase", phase="training") == 1
        assert histogram_count(m, "ftl_allreduce_duration_seconds") > 0
        assert value(m, "ftl_gossip_packets_total", direction="received") > 0
        acks, rtt = value(m, "ftl_gossip_probe_acks_total"), value(m, "ftl_gossip_probe_rtt_seconds_total")
        assert acks > 0 and 0 < rtt / acks < 1.0, f"{w.name}: probe round trips {rtt} s over {acks} acks"
        assert value(m, "ftl_membership_suspicions_total") >= value(m, "ftl_membership_suspicions_refuted_total")
    check_dashboard_queries(scrape(job.workers()[0]))
    victim = job.workers()[tt.rng.randrange(1, 3)]
    job.kill(victim.name)
    print(f"kill -9 {victim.name}")
    survivors = [w for w in job.workers() if w is not victim]
    for w in survivors:
        def recovered():
            m = scrape(w)
            return (value(m, "ftl_view_world_size") == 2 and value(m, "ftl_view_changes_total", cause="death") >= 1
                    and histogram_count(m, "ftl_training_recovery_duration_seconds") >= 1)
        job.wait(f"{w.name} shows the death, a world of 2 and a recovery time", recovered, 40)
        m = scrape(w)
        took = sum(v for _, v in m["ftl_training_recovery_duration_seconds"].series("_sum"))
        print(f"{w.name}: recovery observed, {took:.2f} s in all; members alive "
              f"{value(m, 'ftl_members', state='alive')}")
        before = value(m, "ftl_training_steps_total")
        job.wait(f"{w.name} steps again", lambda: value(scrape(w), "ftl_training_steps_total") > before, 20)


def check_dashboard_queries(families):
    """Every metric deploy/k8s/grafana-dashboard.json queries is one a worker serves."""
    with open(os.path.join(K8S, "grafana-dashboard.json")) as f:
        queried = set(re.findall(r"\bftl_[a-z_]+", f.read())) - {"ftl_training_job"}
    served = set(families) | {f"{n}{s}" for n, f in families.items() if f.type == "histogram"
                              for s in ("_bucket", "_sum", "_count")}
    missing = sorted(queried - served)
    assert not missing, f"the dashboard queries metrics no worker serves: {missing}"
    print(f"the dashboard's {len(queried)} metrics are all served")


def scenario_k8s_metrics_port_agrees(train, ctl):
    """worker.env's FTL_METRICS_ADDR port is the Deployment's `metrics` port, its scrape annotation, and the
    PodMonitor's port name."""
    with open(os.path.join(K8S, "worker.env")) as f:
        port = re.search(r"^FTL_METRICS_ADDR=[0-9.]+:(\d+)$", f.read(), re.M).group(1)
    with open(os.path.join(K8S, "deployment.yaml")) as f:
        deployment = f.read()
    assert f'prometheus.io/port: "{port}"' in deployment, "the scrape annotation's port differs"
    assert re.search(rf"- name: metrics\b.*\n\s+containerPort: {port}\n", deployment), "no `metrics` port " + port
    with open(os.path.join(K8S, "monitoring", "podmonitor.yaml")) as f:
        assert re.search(r"- port: metrics$", f.read(), re.M), "the PodMonitor does not scrape the `metrics` port"
    print(f"metrics port {port}: worker.env, deployment.yaml (port and annotation) and the PodMonitor agree")


class Prometheus:
    """A real Prometheus server on loopback scraping targets every second, asked through its HTTP API."""

    def __init__(self, job, targets):
        self.dir = os.path.join(job.dir, "prometheus")
        os.makedirs(self.dir)
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:  # YAML is a superset of JSON
            json.dump({"global": {"scrape_interval": "1s", "scrape_timeout": "900ms"},
                       "scrape_configs": [{"job_name": "ftl", "static_configs": [{"targets": targets}]}]}, f)
        self.addr = f"127.0.0.1:{free_port()}"
        with open(os.path.join(self.dir, "log"), "wb") as log:
            self.proc = subprocess.Popen([shutil.which("prometheus"), f"--config.file={config}",
                                          f"--storage.tsdb.path={self.dir}/data", f"--web.listen-address={self.addr}"],
                                         stdout=log, stderr=log, preexec_fn=_die_with_parent)
        wait_until("Prometheus is ready", lambda: self._ready(), 30, step=0.2)

    def _ready(self):
        assert self.proc.poll() is None, f"prometheus exited: see {self.dir}/log"
        try:
            return exposition.scrape(self.addr, "/-/ready")[0] == 200
        except OSError:
            return False

    def query(self, promql):
        """An instant query: the value of its single series, or None when it has none."""
        status, _, body = exposition.scrape(self.addr, "/api/v1/query?query=" + urllib.parse.quote(promql))
        assert status == 200, f"{promql}: {status} {body}"
        result = json.loads(body)["data"]["result"]
        assert len(result) <= 1, f"{promql}: more than one series: {result}"
        return float(result[0]["value"][1]) if result else None

    def close(self):
        self.proc.kill()
        self.proc.wait()


def scenario_prometheus_server_sees_a_kill9(train, ctl):
    """A Prometheus server (Debian's `prometheus`) scrapes three workers every second; after a kill -9 its
    query API returns the world size dropping from 3 to 2, a view change by death and a recovery time."""
    if not shutil.which("prometheus"):
        raise tt.Skip("prometheus is not installed (Debian: apt-get install prometheus)")
    job = tt.new_job(train, ctl, FTL_STEPS=STEPS, **tt.JOB)
    tt.start_job(job, 3, env_of=metrics_env)
    victim = job.workers()[tt.rng.randrange(1, 3)]
    survivor = job.agents["w0"].env["FTL_METRICS_ADDR"]
    prom = Prometheus(job, [w.env["FTL_METRICS_ADDR"] for w in job.workers()])
    try:
        job.wait("Prometheus sees a world of 3 on every worker",
                 lambda: prom.query("min(ftl_view_world_size)") == 3 and prom.query("count(up == 1)") == 3, 30)
        job.kill(victim.name)
        print(f"kill -9 {victim.name}")
        world = f'ftl_view_world_size{{instance="{survivor}"}}'
        victim_up = f'up{{instance="{victim.env["FTL_METRICS_ADDR"]}"}}'
        job.wait("Prometheus has the drop from 3 to 2, the death, a recovery and the victim down",
                 lambda: (prom.query(world) == 2 and prom.query(f"max_over_time({world}[5m])") == 3
                          and (prom.query('sum(ftl_view_changes_total{cause="death"})') or 0) >= 1
                          and (prom.query("sum(ftl_training_recovery_duration_seconds_count)") or 0) >= 1
                          and prom.query(victim_up) == 0), 40)
        recovery = prom.query("max(ftl_training_recovery_duration_seconds_sum / ftl_training_recovery_duration_seconds_count)")
        p90 = prom.query("histogram_quantile(0.9, sum by (le) (ftl_training_recovery_duration_seconds_bucket))")
        print(f"Prometheus: world size 3 -> 2, view change by death, recovery {recovery:.3f} s "
              f"(p90 bucket bound {p90:.3f} s)")
    finally:
        prom.close()


def raw_request(addr, data, hold=False):
    """Sends data on a new connection and returns what comes back until the server closes (or the socket)."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    if hold:
        s.sendall(data)
        return s
    with s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and stopped reading: the reply is still there to read
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(chunk)


def scenario_bad_requests_are_answered_and_serving_goes_on(train, ctl):
    """Malformed, oversized, wrong-method and wrong-path requests get their status; a client that never
    finishes its request and a crowd of idle connections block nobody; the agent keeps serving."""
    job = tt.new_job(train, ctl, FTL_STEPS=STEPS, **tt.JOB)
    tt.start_job(job, 1, env_of=metrics_env)
    w = job.workers()[0]
    addr = w.env["FTL_METRICS_ADDR"]
    cases = [(b"garbage\r\n\r\n", "400"), (b"GET /metrics\r\n\r\n", "400"), (b"GET\x00 / HTTP/1.1\r\n\r\n", "400"),
             (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", "413"),
             (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 200000, "413"),
             (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "405"),
             (b"GET /other HTTP/1.1\r\n\r\n", "404")]
    for data, status in cases:
        reply = raw_request(addr, data)
        assert reply.startswith(f"HTTP/1.1 {status} "), f"{data[:40]!r}: expected {status}, got {reply[:80]!r}"
    slow = raw_request(addr, b"GET /metr", hold=True)  # never finishes its request
    idle = [raw_request(addr, b"", hold=True) for _ in range(24)]  # more than the server keeps open
    time.sleep(0.2)
    for s in idle:
        s.close()
    took = wait_until("a scrape succeeds beside the slow client",
                      lambda: exposition.scrape(addr)[0] == 200, 10, step=0.2)
    print(f"served beside a stalled client and 24 idle connections after {took:.2f} s")
    slow.settimeout(15)
    assert slow.recv(100) == b"", "the stalled client was not closed after the request timeout"
    slow.close()
    m = scrape(w)
    assert value(m, "ftl_training_steps_total") > 0
    assert w.is_running()


def scenario_bad_metrics_addr_is_refused_by_name(train, ctl):
    """A malformed address, a port of 0 and a port in use each stop the worker with FTL_METRICS_ADDR named."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    in_use = f"127.0.0.1:{busy.getsockname()[1]}"
    run_dir = tempfile.mkdtemp(prefix="ftl-metrics-test-")
    for addr in ("garbage", "127.0.0.1:0", "localhost:9464", in_use):
        port = free_port()
        env = dict(os.environ, FTL_NAME="w0", FTL_BIND=f"127.0.0.1:{port}", FTL_INSECURE="1",
                   FTL_RUN_DIR=run_dir, FTL_METRICS_ADDR=addr, FTL_STEPS="5")
        r = subprocess.run([train], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode != 0, f"FTL_METRICS_ADDR={addr} was accepted"
        assert f"FTL_METRICS_ADDR={addr}" in r.stderr, f"FTL_METRICS_ADDR={addr}: not named in: {r.stderr[-400:]}"
        print(f"FTL_METRICS_ADDR={addr}: {r.stderr.strip().splitlines()[-1]}")
    busy.close()
    shutil.rmtree(run_dir, ignore_errors=True)


def main():
    return tt.main_of(globals(), limit=120)

if __name__ == "__main__":
    sys.exit(main())
