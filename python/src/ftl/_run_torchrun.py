"""ftlrun's torchrun habits: the flags a PyTorch user types (--nproc-per-node, --nnodes, --node-rank,
--master-addr, --master-port) and the variables their scripts read (RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, OMP_NUM_THREADS).

Why these are only a first guess: ftl has no fixed ranks. A worker's rank and the world's size come from
each view of the elastic membership, and change when workers leave or join; the agent knows them
(agent.rank, agent.world_size, agent.job_status()), the environment cannot. So the variables hold the
job's intended first view, as the flags describe it: node --node-rank of --nnodes nodes, each running
--nproc-per-node workers, so RANK = node_rank * nproc_per_node + local_rank and WORLD_SIZE = nodes *
nproc_per_node (the minimum number of nodes for --nnodes MIN:MAX: the first view forms once that many are
in). ftl itself reads none of them; MASTER_ADDR and MASTER_PORT name where a script may put its own torch
store (torch.distributed's env:// init), the first seed's host and torchrun's port 29500 by default.

--nnodes is the job's size, which ftl takes in workers, not nodes: times --nproc-per-node it gives
FTL_MIN_WORKERS, FTL_MAX_WORKERS (hot spares wait above it) and, for a fixed N, FTL_EXPECTED_WORKERS
(the first view waits for all N nodes' workers, as torchrun's rendezvous does). --spares K is FTL_SPARES=K."""

import re

from ._run_key import Refusal

MASTER_PORT = 29500     # torchrun's default; nothing of ftl listens there
MAX_WORKERS = 4096      # FTL_RDV_MAX_MEMBERS (rendezvous/rendezvous.h): the most workers in one view
NNODES = re.compile(r"(?P<min>\d+)(:(?P<max>\d+))?")
TORCH_NAMES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


class Shape:
    """The job as torchrun's flags describe it: nproc workers here, on node node_rank of min_nodes..max_nodes
    (max_nodes None when --nnodes was not given: ftl's own FTL_* settings, or their defaults, rule)."""

    def __init__(self, nproc, min_nodes, max_nodes, node_rank, spares=0):
        self.nproc, self.min_nodes, self.max_nodes, self.node_rank = nproc, min_nodes, max_nodes, node_rank
        self.spares = spares

    def worker_counts(self):
        """FTL_MIN_WORKERS, FTL_MAX_WORKERS, FTL_EXPECTED_WORKERS from --nnodes (none without it), and for
        --spares K, FTL_SPARES=K with the spares counted in FTL_EXPECTED_WORKERS: the first view waits for
        them and keeps the K youngest (started last) out; a worker that joins later makes the oldest spare a
        member at once and waits in its place, so the job grows without a process start on the way."""
        counts = {}
        if self.max_nodes is not None:
            counts = {"FTL_MIN_WORKERS": self.min_nodes * self.nproc, "FTL_MAX_WORKERS": self.max_nodes * self.nproc}
            if self.min_nodes == self.max_nodes:
                counts["FTL_EXPECTED_WORKERS"] = counts["FTL_MIN_WORKERS"]
        if self.spares:
            counts["FTL_SPARES"] = self.spares
            counts["FTL_EXPECTED_WORKERS"] = self.min_nodes * self.nproc + self.spares
        return {k: str(v) for k, v in counts.items()}

    def torch_env(self, local_rank, master_addr, master_port):
        """Local worker local_rank's variables in the intended first view (the module's comment says why). A
        spare (local_rank >= nproc) has no rank in it: RANK -1, until a view takes it in (agent.rank)."""
        is_spare = local_rank >= self.nproc
        return {"RANK": "-1" if is_spare else str(self.node_rank * self.nproc + local_rank),
                "WORLD_SIZE": str(self.min_nodes * self.nproc),
                "LOCAL_RANK": str(local_rank), "LOCAL_WORLD_SIZE": str(self.nproc + self.spares),
                "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port)}


def job_shape(args):
    """The Shape of --nproc-per-node, --nnodes and --node-rank; refuses values no job could have."""
    nproc = worker_count(args.nproc)
    min_nodes, max_nodes = node_counts(args.nnodes)
    most = (max_nodes or 1) * nproc
    if most > MAX_WORKERS:
        raise Refusal(f"--nproc-per-node {nproc} on {max_nodes or 1} node(s) (--nnodes) makes {most} workers, over "
                      f"the {MAX_WORKERS} one job can hold; give fewer")
    first_view = min_nodes or 1
    if not 0 <= args.node_rank < first_view:
        raise Refusal(f"--node-rank {args.node_rank}: the first view has {first_view} node(s) (--nnodes), so node "
                      f"ranks are 0..{first_view - 1}; a node that joins later leaves it out and reads its rank "
                      f"from agent.rank")
    if not 0 <= args.spares <= MAX_WORKERS - most:
        raise Refusal(f"--spares {args.spares}: give 0 to {MAX_WORKERS - most} (workers beyond the job's "
                      f"{most} that wait as hot spares)")
    return Shape(nproc, first_view, max_nodes, args.node_rank, args.spares)


def worker_count(text):
    if not text.isdigit() or int(text) < 1:
        raise Refusal(f"--nproc-per-node {text}: give the number of workers to start here, 1 or more (for one per "
                      f"GPU, the number of GPUs; CUDA_VISIBLE_DEVICES chooses them)")
    return int(text)


def node_counts(text):
    """(min, max) nodes from --nnodes N or MIN:MAX; (None, None) when not given."""
    if text is None:
        return None, None
    m = NNODES.fullmatch(text)
    low, high = (int(m["min"]), int(m["max"] or m["min"])) if m else (0, 0)
    if not 1 <= low <= high:
        raise Refusal(f"--nnodes {text}: expected N (a job of N nodes) or MIN:MAX (1 <= MIN <= MAX), such as "
                      f"--nnodes 2 or --nnodes 1:4")
    return low, high


def master_address(args, user_seeds, reachable):
    """MASTER_ADDR and MASTER_PORT: the flags, else the first seed's host (the job's first machine) or this
    machine's address, and torchrun's port."""
    if args.master_port is not None and not 1 <= args.master_port <= 65535:
        raise Refusal(f"--master-port {args.master_port}: expected a port, 1..65535")
    port = MASTER_PORT if args.master_port is None else args.master_port
    if args.master_addr:
        return args.master_addr, port
    if user_seeds:
        return user_seeds[0].rsplit(":", 1)[0].strip("[]"), port
    return str(reachable), port


def omp_threads(env, nproc):
    """OMP_NUM_THREADS=1 when several workers share this machine and the user left it unset, as torchrun does:
    each worker's OpenMP would otherwise start a thread per core, nproc times over."""
    if nproc > 1 and "OMP_NUM_THREADS" not in env:
        return {"OMP_NUM_THREADS": "1"}
    return {}
