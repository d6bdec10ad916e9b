"""Kubernetes pods on one machine, for the pod-like end-to-end test (test_pods.py) and bench/k8s.

What deploy/k8s gives a worker, reproduced with network namespaces (needs root):
- a pod is a network namespace with its own IP on a bridge this harness creates (10.77.0.0/24: private,
  nothing outside these namespaces is ever addressed), running the worker through `ip netns exec`;
- its environment is the Deployment's: the job settings from deploy/k8s/worker.env (the file kustomize
  turns into the ConfigMap) and the per-pod variables deployment.yaml sets (POD_ENV below);
- the headless Service: `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts, so each pod
  has its own hosts file, where the Service name maps to every live pod's IP, rewritten (in place: the
  bind mount holds the inode) whenever a pod comes or goes, as the Service's DNS answer would change;
- `kubectl exec` is `ip netns exec` with the pod's environment (PodJob.exec): probes, preStop and
  `ftlctl status` run inside the pod, exactly as the manifests write them;
- deleting a pod (PodJob.terminate) is what the kubelet does: the pod leaves the Service's endpoints,
  the preStop hook `ftlctl leave` runs, then SIGTERM, then SIGKILL after the grace period.
Everything is removed on close(): workers, namespaces, veths, the bridge, /etc/netns/<ns>. Leftovers of a
run that was killed (its pid gone) are swept at the next start."""

import os
import random
import re
import shutil
import signal
import string
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
from workers import TrainingJob, Worker, wait_until  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WORKER_ENV = os.path.join(ROOT, "deploy", "k8s", "worker.env")
SUBNET = "10.77.0"
SERVICE = "ftl-workers"        # service.yaml's name, the host part of FTL_SEEDS
GOSSIP_PORT = 7946
GRACE_S = 60                   # deployment.yaml's terminationGracePeriodSeconds
PRESTOP = ("leave",)           # deployment.yaml's preStop: ftlctl leave
READINESS = ("ready", "--spares")  # deployment.yaml's readinessProbe: ftlctl ready --spares
NETNS_DIR = "/etc/netns"


def pod_env(name, ip, key_file, run_dir):
    """The per-pod variables deployment.yaml sets (downward API, Service name, Secret, emptyDir)."""
    return dict(FTL_NAME=name, POD_IP=ip, FTL_ADVERTISE=f"{ip}:{GOSSIP_PORT}", FTL_BIND=f"0.0.0.0:{GOSSIP_PORT}",
                FTL_SEEDS=f"{SERVICE}:{GOSSIP_PORT}", FTL_GOSSIP_KEY_FILE=key_file, FTL_RUN_DIR=run_dir)


def read_env_file(path):
    """KEY=VALUE lines, as kustomize's configMapGenerator reads them (# comments and blank lines skipped)."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                env[key.strip()] = value
    return env


def run(*argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def why_pods_cannot_run():
    """None when this machine can run pods (root, ip netns, veth and bridge), else the reason."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not shutil.which("ip"):
        return "needs iproute2's ip"
    probe = f"ftlprobe{os.getpid()}"
    try:
        run("ip", "netns", "add", probe)
        run("ip", "link", "add", f"fb{os.getpid()}", "type", "bridge")
        run("ip", "link", "del", f"fb{os.getpid()}")
    except RuntimeError as e:
        return f"cannot make network namespaces or bridges here: {e}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _pid_alive(pid):
    try:
        os.kill(int(pid), 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def sweep_leftovers():
    """Removes the namespaces, bridges and hosts folders of earlier runs whose process is gone."""
    for ns in os.listdir("/run/netns") if os.path.isdir("/run/netns") else []:
        m = re.fullmatch(r"ftl-(\d+)-\d+", ns)
        if m and not _pid_alive(m.group(1)):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(os.path.join(NETNS_DIR, ns), ignore_errors=True)
    for link in os.listdir("/sys/class/net"):
        m = re.fullmatch(r"ftl-br-(\d+)", link) or re.fullmatch(r"fbs(\d+)-\d+", link)
        if m and not _pid_alive(m.group(1)):
            subprocess.run(["ip", "link", "del", link], capture_output=True)


class PodNetwork:
    """A bridge and one network namespace per pod, each with a veth on the bridge and its own IP."""

    def __init__(self):
        sweep_leftovers()
        self.made_netns_dir = not os.path.isdir(NETNS_DIR)
        self.tag = str(os.getpid())
        self.bridge = f"ftl-br-{self.tag}"
        self.next_index = 0
        self.pods = {}  # netns -> (bridge-side veth, ip)
        self.side_bridges = {}  # side (1, 2, ...) -> bridge: a partition's other sides (side 0 is self.bridge)
        run("ip", "link", "add", self.bridge, "type", "bridge")
        # Bridged frames must not go through the host's iptables (br_netfilter), whatever its rules.
        subprocess.run(["ip", "link", "set", self.bridge, "type", "bridge", "nf_call_iptables", "0"],
                       capture_output=True)
        run("ip", "link", "set", self.bridge, "up")

    def add(self):
        """A new pod's namespace; returns (netns, ip)."""
        index = self.next_index
        self.next_index += 1
        assert index < 240, "out of pod addresses"
        ns, veth, peer = f"ftl-{self.tag}-{index}", f"fv{self.tag}-{index}", f"fp{self.tag}-{index}"
        ip = f"{SUBNET}.{10 + index}"
        run("ip", "netns", "add", ns)
        self.pods[ns] = (veth, ip)
        os.makedirs(os.path.join(NETNS_DIR, ns), exist_ok=True)
        run("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        run("ip", "link", "set", peer, "netns", ns)
        run("ip", "link", "set", veth, "master", self.bridge, "up")
        run("ip", "-n", ns, "link", "set", peer, "name", "eth0")
        run("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        run("ip", "-n", ns, "link", "set", "lo", "up")
        return ns, ip

    def write_hosts(self, ns, hostname, service_ips):
        """The pod's /etc/hosts: itself, and the Service name for every address in service_ips. Written in
        place (the pod's bind mount keeps the inode), in one write."""
        own_ip = self.pods[ns][1]
        lines = ["127.0.0.1\tlocalhost", f"{own_ip}\t{hostname}"] + [f"{ip}\t{SERVICE}" for ip in service_ips]
        data = ("\n".join(lines) + "\n").encode()
        fd = os.open(os.path.join(NETNS_DIR, ns, "hosts"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    def set_link(self, ns, is_up):
        """Cuts (or restores) the pod's only link: its veth on the bridge goes down (or up)."""
        run("ip", "link", "set", self.pods[ns][0], "up" if is_up else "down")

    def set_side(self, ns, side):
        """Moves the pod's veth to side `side`'s bridge (0: the main one). Pods on different sides cannot
        reach each other; pods on one side still can (a partition, not a cut of each pod)."""
        if side and side not in self.side_bridges:
            bridge = f"fbs{self.tag}-{side}"
            run("ip", "link", "add", bridge, "type", "bridge")
            subprocess.run(["ip", "link", "set", bridge, "type", "bridge", "nf_call_iptables", "0"], capture_output=True)
            run("ip", "link", "set", bridge, "up")
            self.side_bridges[side] = bridge
        run("ip", "link", "set", self.pods[ns][0], "master", self.side_bridges[side] if side else self.bridge)

    def remove(self, ns):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)  # takes its veth pair along
        shutil.rmtree(os.path.join(NETNS_DIR, ns), ignore_errors=True)
        self.pods.pop(ns, None)

    def close(self):
        for ns in list(self.pods):
            self.remove(ns)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        for bridge in self.side_bridges.values():
            subprocess.run(["ip", "link", "del", bridge], capture_output=True)
        if self.made_netns_dir:
            try:
                os.rmdir(NETNS_DIR)  # only if empty: another run may be using it
            except OSError:
                pass


class Pod(Worker):
    """A worker running in its pod's network namespace."""
    netns = None
    ip = None

    def command(self):
        return ["ip", "netns", "exec", self.netns, self.cluster.agent_bin]

    def heard(self, event, subject):
        """Whether this pod's log records the membership event (join, left, dead...) about subject."""
        return f'msg="member {event}" member={subject} ' in self.log_text()


def deployment_pod_name(rng, replica_set):
    """ftl-worker-<ReplicaSet hash>-<5 characters>, as the Deployment names its pods."""
    suffix = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))
    return f"ftl-worker-{replica_set}-{suffix}"


class PodJob(TrainingJob):
    """A Deployment of training workers: scale() adds or deletes pods, the Service follows."""
    member_class = Pod

    def __init__(self, train_bin, ctl_bin, rng=None, **overrides):
        super().__init__(train_bin, ctl_bin, **{**read_env_file(WORKER_ENV), **overrides})
        self.rng = rng or random.Random()
        self.replica_set = "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(9))
        self.net = PodNetwork()
        self.endpoints = []  # pods in the Service's DNS answer, in creation order
        self.key_file = os.path.join(self.dir, "gossip-key")  # the Secret, mounted read-only
        with open(os.open(self.key_file, os.O_WRONLY | os.O_CREAT, 0o400), "w") as f:
            f.write(self.key + "\n")

    # ---- the Deployment's side ----

    def add(self, name=None, start=True, **extra):
        """A new pod: namespace, address, Service entry (publishNotReadyAddresses: at once), worker."""
        name = name or deployment_pod_name(self.rng, self.replica_set)
        ns, ip = self.net.add()
        run_dir = os.path.join(self.dir, f"{name}.run")  # the emptyDir for the control socket
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("FTL_")}
        env = {**inherited, **self.job_env, **pod_env(name, ip, self.key_file, run_dir),
               **{k: str(v) for k, v in extra.items()}}
        pod = Pod(self, name, GOSSIP_PORT, env, host=ip)
        pod.netns, pod.ip = ns, ip
        pod.socket = os.path.join(run_dir, f"{name}.sock")
        self.agents[name] = pod
        self.endpoints.append(pod)
        self.publish_endpoints()
        if start:
            pod.start()
        return pod

    def publish_endpoints(self):
        """Every pod's hosts file now maps the Service name to the pods in self.endpoints."""
        ips = [p.ip for p in self.endpoints]
        for pod in self.agents.values():
            if pod.netns in self.net.pods:
                self.net.write_hosts(pod.netns, pod.name, ips)

    def pods(self):
        """Pods not deleted, oldest first."""
        return [p for p in self.agents.values() if p in self.endpoints]

    def scale_up(self, n):
        """n new pods at once; returns them."""
        return [self.add() for _ in range(n)]

    def terminate(self, pods, with_prestop=True):
        """Deletes pods as the kubelet does, all at once: out of the Service, preStop (`ftlctl leave`), then
        SIGTERM, SIGKILL after the grace period. Returns {name: preStop's CompletedProcess} once every one has
        exited. Their namespaces stay until close() so their logs and exit codes can be read.
        with_prestop=False: a pod spec without the hook (SIGTERM only)."""
        for pod in pods:
            self.endpoints.remove(pod)
        self.publish_endpoints()
        hooks = {}

        def stop(pod):
            if with_prestop:
                hooks[pod.name] = self.exec(pod, self.ctl_bin, *PRESTOP, timeout=GRACE_S)
            if pod.is_running():
                pod.signal(signal.SIGTERM)
        threads = [threading.Thread(target=stop, args=(p,)) for p in pods]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.monotonic() + GRACE_S
        for pod in pods:
            try:
                pod.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pod.proc.kill()
                pod.proc.wait()
        return hooks

    # ---- kubectl exec and the network ----

    def exec(self, pod, *argv, timeout=20):
        """Runs argv inside the pod (its network namespace, hosts file and environment)."""
        return subprocess.run(["ip", "netns", "exec", pod.netns, *argv], env=pod.env, capture_output=True,
                              text=True, timeout=timeout)

    def ctl(self, agent, *args, timeout=15):
        """ftlctl inside the pod, finding its agent from FTL_NAME and FTL_RUN_DIR as the probes do."""
        return self.exec(agent, self.ctl_bin, *args, timeout=timeout)

    def is_ready(self, pod):
        return self.ctl(pod, *READINESS).returncode == 0

    def cut(self, pod):
        self.net.set_link(pod.netns, False)

    def heal(self, pod):
        self.net.set_link(pod.netns, True)

    def partition(self, sides):
        """Splits the pods into sides (lists of pods): each side reaches only itself."""
        for side, pods in enumerate(sides):
            for pod in pods:
                self.net.set_side(pod.netns, side)

    def heal_partition(self):
        for pod in self.pods():
            self.net.set_side(pod.netns, 0)

    def run_test(self, body):
        """Runs body(); PASS and the job's directory removed if it returns, each pod's last log lines if it
        raises; the job is closed (and a pending alarm cancelled) either way. Returns the exit status."""
        start = time.monotonic()
        try:
            body()
            print(f"PASS in {time.monotonic() - start:.1f} s")
            shutil.rmtree(self.dir, ignore_errors=True)
            return 0
        except BaseException:
            self.print_last_logs()
            raise
        finally:
            signal.alarm(0)
            self.close()

    def print_last_logs(self, lines=25):
        """Each pod's exit status and last log lines: what a failed test shows."""
        for pod in self.agents.values():
            print(f"---- {pod.name} ({pod.ip}) exit {pod.proc.poll() if pod.proc else None}: last log lines")
            print("\n".join(pod.log_text().splitlines()[-lines:]))

    def close(self):
        try:
            super().close()
        finally:
            self.net.close()


def wait_world(job, pods, world, timeout, phase="training"):
    """Waits until `ftlctl status` in each pod shows a view of `world` members in `phase`; returns the
    seconds it took."""
    def shows():
        for pod in pods:
            s = job.status(pod)
            view = s and s.get("view")
            if not view or view.get("world_size") != world or view.get("phase") != phase:
                return False
        return True
    return job.wait(f"ftlctl status shows world_size {world} ({phase}) in {[p.name for p in pods]}", shows,
                    timeout)


__all__ = ["PodJob", "Pod", "why_pods_cannot_run", "wait_world", "wait_until", "read_env_file", "WORKER_ENV"]
