"""bench/cluster: an elastic job across hosts whose links are not loopback (issue 41 item 2). Root.

Each host is a network namespace with a private /dev/shm (a mount namespace held by one process per host,
so the witness works between the workers of a host and not across hosts, as on real machines); W workers
of the C example run on each. The hosts' links go through link_shaper (this folder: a user-space router,
because this kernel has no netem, no fq or etf, no NFQUEUE): every link has the profile's one-way delay,
jitter, loss and rate. The bench first measures that the links are what they claim (a UDP round trip, a TCP
transfer's rate), then prints one JSON line per figure:
- kill9_s: kill -9 of one worker -> the first step every other worker completes without it;
- host_loss_s: a whole host lost (its links cut and its workers killed at once: no reset, no refusal, no
  witness across hosts) -> the first step of the others;
- partition: the hosts split in two halves of equal size: steps completed anywhere while split (0: neither
  side has a quorum), then heal -> the first step in a view of every worker (heal_s);
- join_s: a new worker's start -> its first step, with --state-mb of registered state to receive;
- allreduce_busbw: the tcp backend's allreduce, one rank per host (allreduce_rank, built beside the shaper),
  f32 sum up to --busbw-max bytes: bench_comm_tcp's JSON lines (busbw_GBps, nccl-tests' convention), with the
  profile;
- soak (--soak-s): training that long at --loss-pct on every link: false deaths and views after forming.
Usage:
  sudo python3 bench/cluster/cluster.py --train build-rel/examples/ftl-train-example --ctl build-rel/ctl/ftlctl \\
      --shaper build-rel/bench/cluster/link_shaper [--hosts 4 --per-host 2 --rtt-ms 2 --rate-gbit 10]"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "agent"))
from workers import TrainingJob, Worker  # noqa: E402

NS = "ftlc-host"
PORT = 7946


def host_ip(h):
    return f"10.78.0.{h + 1}"


def sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True)


class Links:
    """The shaper and the hosts' namespaces, each with its TUN device, address and /dev/shm holder."""

    def __init__(self, shaper, hosts, delay_us, jitter_us, loss_pct, rate_mbit):
        self.hosts = hosts
        for h in range(hosts):  # leftovers of a killed run
            subprocess.run(["ip", "netns", "del", f"{NS}{h}"], capture_output=True)
        self.proc = subprocess.Popen([shaper, str(hosts), str(delay_us), str(jitter_us), str(loss_pct),
                                      str(rate_mbit)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("link_shaper did not start (root? /dev/net/tun?)")
        self.holders = []
        for h in range(hosts):
            ns = f"{NS}{h}"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", f"ftlc{h}", "netns", ns)
            sh("ip", "-n", ns, "addr", "add", f"{host_ip(h)}/24", "dev", f"ftlc{h}")
            sh("ip", "-n", ns, "link", "set", f"ftlc{h}", "mtu", "65000", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            holder = subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "-m", "--propagation", "private",
                                       "sh", "-c", "mount -t tmpfs -o size=256m tmpfs /dev/shm && exec sleep 1000000"])
            self.holders.append(holder)
        time.sleep(0.3)  # the holders' mounts

    def enter(self, h):
        """The command prefix that runs a program on host h (its network and mount namespaces)."""
        return ["nsenter", "-t", str(self.holders[h].pid), "-n", "-m", "--"]

    def say(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def cut(self, a, b):
        self.say(f"cut {a} {b}")

    def join(self, a, b):
        self.say(f"join {a} {b}")

    def stats(self):
        return json.loads(self.say("stats"))

    def close(self):
        for p in self.holders:
            p.kill()
        try:
            self.say("quit")
        except (BrokenPipeError, OSError):
            pass
        self.proc.wait(5)
        for h in range(self.hosts):
            subprocess.run(["ip", "netns", "del", f"{NS}{h}"], capture_output=True)


class HostWorker(Worker):
    def command(self):
        return self.cluster.links.enter(self.host) + super().command()


class ClusterJob(TrainingJob):
    member_class = HostWorker

    def __init__(self, links, train, ctl, **env):
        super().__init__(train, ctl, **env)
        self.links = links
        self.on_host = [0] * links.hosts

    def add_on(self, h, name, **extra):
        port = PORT + self.on_host[h]
        self.on_host[h] += 1
        env = dict(os.environ, FTL_NAME=name, FTL_BIND=f"{host_ip(h)}:{port}", FTL_RUN_DIR=self.dir,
                   FTL_GOSSIP_KEY=self.key, FTL_PROFILE=self.profile, FTL_LOG_LEVEL="info",
                   FTL_SEEDS=",".join(f"{host_ip(k)}:{PORT}" for k in range(min(2, self.links.hosts))))
        env.update(self.job_env)
        env.update({k: str(v) for k, v in extra.items()})
        w = HostWorker(self, name, port, env, host_ip(h))
        w.host = h
        self.agents[name] = w
        w.start()
        return w


def link_check(links, args):
    """The links as measured: a UDP round trip (median of 50) and one TCP transfer's rate, host 0 -> 1."""
    echo = ("import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind((sys.argv[1],9999))\n"
            "while True:\n d,a=s.recvfrom(2048);s.sendto(d,a)\n")
    ping = ("import socket,sys,time,statistics\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(1)\n"
            "r=[]\nfor i in range(50):\n t=time.perf_counter();s.sendto(b'x'*64,(sys.argv[1],9999))\n"
            " try:\n  s.recvfrom(2048);r.append(time.perf_counter()-t)\n except OSError:pass\n time.sleep(0.005)\n"
            "print(statistics.median(r)*1e3)\n")
    sink = ("import socket,sys\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
            "s.bind((sys.argv[1],9998));s.listen(1);c,_=s.accept()\nwhile c.recv(1<<20):pass\n")
    blast = ("import socket,sys,time\nc=socket.create_connection((sys.argv[1],9998));b=b'x'*(1<<20);n=0\n"
             "t=time.perf_counter()\nwhile time.perf_counter()-t<2:\n c.sendall(b);n+=len(b)\n"
             "print(n*8/(time.perf_counter()-t)/1e9)\n")
    server = subprocess.Popen(links.enter(1) + [sys.executable, "-c", echo, host_ip(1)])
    drain = subprocess.Popen(links.enter(1) + [sys.executable, "-c", sink, host_ip(1)])
    time.sleep(0.5)
    try:
        rtt = float(subprocess.run(links.enter(0) + [sys.executable, "-c", ping, host_ip(1)], check=True,
                                   capture_output=True, text=True).stdout)
        gbit = float(subprocess.run(links.enter(0) + [sys.executable, "-c", blast, host_ip(1)], check=True,
                                    capture_output=True, text=True).stdout)
    finally:
        server.kill()
        drain.kill()
    return {"measured_rtt_ms": round(rtt, 3), "measured_tcp_gbit": round(gbit, 2)}


def start_job(links, args, **extra):
    n = args.hosts * args.per_host
    job = ClusterJob(links, args.train, args.ctl, FTL_STEPS=1000000, FTL_STEP_SLEEP_MS=args.step_ms,
                     FTL_BATCH=32, FTL_EXPECTED_WORKERS=n, FTL_MIN_WORKERS=2, **extra)
    for h in range(args.hosts):
        for k in range(args.per_host):
            job.add_on(h, f"h{h}w{k}")
    job.wait(f"a step of all {n}", lambda: any(s["world"] == n for w in job.workers() for s in w.steps()), 120)
    job.wait_step(job.progress() + 20, 60)
    return job


def epoch_now(job):
    return max(s["epoch"] for w in job.workers() for s in w.steps())


def first_step_after(job, survivors, epoch0, timeout=60):
    job.wait("a step in a new view on every survivor", lambda: all(
        any(s["epoch"] > epoch0 for s in w.steps()) for w in survivors), timeout)
    return max(min(s["t"] for s in w.steps() if s["epoch"] > epoch0) for w in survivors)


def kill9(links, args):
    job = start_job(links, args)
    try:
        victim = job.agents["h1w0"]
        survivors = [w for w in job.workers() if w is not victim]
        e0, t = epoch_now(job), time.time()
        victim.signal(signal.SIGKILL)
        return first_step_after(job, survivors, e0) - t
    finally:
        job.close()


def host_loss(links, args):
    job = start_job(links, args)
    lost = args.hosts - 1
    try:
        victims = [w for w in job.workers() if w.host == lost]
        survivors = [w for w in job.workers() if w.host != lost]
        e0, t = epoch_now(job), time.time()
        for h in range(args.hosts):
            if h != lost:
                links.cut(lost, h)
        for v in victims:
            v.signal(signal.SIGKILL)
        return first_step_after(job, survivors, e0) - t
    finally:
        job.close()
        for h in range(args.hosts):
            links.join(lost, h)


def partition(links, args):
    job = start_job(links, args)
    half = args.hosts // 2
    try:
        n = args.hosts * args.per_host
        for a in range(half):
            for b in range(half, args.hosts):
                links.cut(a, b)
        time.sleep(1.0)  # the steps in flight fail or finish
        at = job.progress()
        time.sleep(args.partition_s)
        during = job.progress() - at
        t = time.time()
        for a in range(half):
            for b in range(half, args.hosts):
                links.join(a, b)
        e0 = epoch_now(job)
        job.wait("a step of every worker after the heal", lambda: all(
            any(s["world"] == n and s["t"] > t for s in w.steps()) for w in job.workers()), 120)
        heal = max(min(s["t"] for s in w.steps() if s["world"] == n and s["t"] > t) for w in job.workers())
        return {"steps_while_split": during, "heal_s": round(heal - t, 3), "views_after": epoch_now(job) - e0}
    finally:
        job.close()
        for a in range(args.hosts):
            for b in range(args.hosts):
                if a != b:
                    links.join(a, b)


def join(links, args):
    job = start_job(links, args, FTL_EXTRA_STATE_MB=args.state_mb)
    try:
        t = time.time()
        w = job.add_on(0, "joiner")
        job.wait("the joiner's first step", lambda: bool(w.steps()), 120)
        return w.steps()[0]["t"] - t
    finally:
        job.close()


def busbw(links, args):
    """The allreduce's JSON lines from rank 0, one rank per host, each on its host's address."""
    ranks = os.path.join(os.path.dirname(args.shaper), "allreduce_rank")
    addrs = ",".join(f"{host_ip(h)}:{PORT + 100}" for h in range(args.hosts))
    procs = [subprocess.Popen(links.enter(h) + [ranks, str(h), addrs, str(args.busbw_max)], text=True,
                              stdout=subprocess.PIPE if h == 0 else subprocess.DEVNULL) for h in range(args.hosts)]
    try:
        out, _ = procs[0].communicate(timeout=1800)
        if any(p.wait(60) != 0 for p in procs):
            raise RuntimeError("allreduce_rank failed (its stderr says why)")
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    finally:
        for p in procs:
            p.kill()


def soak(links, args):
    job = start_job(links, args)
    try:
        links.say(f"loss {args.loss_pct}")
        e0, at, t = epoch_now(job), job.progress(), time.time()
        time.sleep(args.soak_s)
        steps = job.progress() - at
        rate = steps / (time.time() - t)
        links.say("loss 0")
        deaths = sum(len(re.findall(r'msg="member dead"', w.log_text())) for w in job.workers())
        return {"seconds": args.soak_s, "loss_pct": args.loss_pct, "false_deaths": deaths,
                "views_after_forming": epoch_now(job) - e0, "steps_per_s": round(rate, 1)}
    finally:
        job.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--shaper", required=True, help="bench/cluster/link_shaper, built")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--per-host", type=int, default=2)
    p.add_argument("--rtt-ms", type=float, default=2.0)
    p.add_argument("--jitter-us", type=int, default=0)
    p.add_argument("--rate-gbit", type=float, default=10.0)
    p.add_argument("--loss-pct", type=float, default=1.0, help="the soak's loss on every link")
    p.add_argument("--step-ms", type=int, default=20)
    p.add_argument("--state-mb", type=int, default=100, help="the joiner's state")
    p.add_argument("--partition-s", type=float, default=5.0)
    p.add_argument("--soak-s", type=float, default=0, help="0: no soak")
    p.add_argument("--busbw-max", type=int, default=128 << 20, help="the allreduce's largest size in bytes")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only", choices=["kill9", "host_loss", "partition", "join", "busbw", "soak"])
    args = p.parse_args()
    args.train, args.ctl, args.shaper = (os.path.abspath(x) for x in (args.train, args.ctl, args.shaper))
    if os.geteuid() != 0:
        sys.exit("bench/cluster needs root (network namespaces, TUN devices)")
    base = {"bench": "cluster", "hosts": args.hosts, "per_host": args.per_host, "rtt_ms": args.rtt_ms,
            "rate_gbit": args.rate_gbit}
    links = Links(args.shaper, args.hosts, int(args.rtt_ms * 500), args.jitter_us, 0, args.rate_gbit * 1000)
    try:
        print(json.dumps({**base, "figure": "links", **link_check(links, args)}), flush=True)
        for name, fn in (("kill9_s", kill9), ("host_loss_s", host_loss), ("join_s", join)):
            if args.only and args.only + "_s" != name:
                continue
            runs = [fn(links, args) for _ in range(args.runs)]
            print(json.dumps({**base, "figure": name, "median": round(statistics.median(runs), 3),
                              "min": round(min(runs), 3), "max": round(max(runs), 3), "runs": len(runs),
                              **({"state_mb": args.state_mb} if name == "join_s" else {})}), flush=True)
        if args.only in (None, "partition"):
            print(json.dumps({**base, "figure": "partition", "split_s": args.partition_s,
                              **partition(links, args)}), flush=True)
        if args.only in (None, "busbw"):
            for line in busbw(links, args):
                print(json.dumps({**line, **base, "figure": "allreduce_busbw"}), flush=True)
        if args.soak_s and args.only in (None, "soak"):
            print(json.dumps({**base, "figure": "soak", **soak(links, args)}), flush=True)
        print(json.dumps({**base, "figure": "shaper", **links.stats()}), flush=True)
    finally:
        links.close()


if __name__ == "__main__":
    main()
