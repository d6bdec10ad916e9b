"""torch_digits: data-parallel PyTorch training with ftl, the Python program to copy.

An MLP learns the handwritten digits of scikit-learn's load_digits (1797 8x8 images shipped inside
scikit-learn, no download; a fixed 80/20 train/test split). Every worker runs this same program and
ftl makes them one job that survives kill -9, joins and leaves:
  - ftl.torch.ElasticState registers the model and the optimizer (Adam's moments, created lazily) as
    job state: after each view change every rank holds rank 0's, so a joiner starts where the job is;
  - the elastic sampler hands each rank its slice of the data epoch (info.indices; ftl.torch.batch
    fetches them), so across rescales every sample of an epoch is used exactly once;
  - a step computes the gradient of its slice, sums the step's statistics with one allreduce, averages
    the gradients (weighted by sample counts) with GradientAverager's fused buckets, and only then
    lets the optimizer update, the same on every rank (the step contract: if a collective fails
    because a peer died, nothing changed and the step runs again on the next view);
  - ftl.torch.lr_scaling keeps the learning rate in step with the world size (square-root rule), when the
    global batch grows with the world (FTL_BATCH per rank). With FTL_GLOBAL_BATCH every step takes that
    many samples at any world size, split across the ranks (FTL_MAX_BATCH_PER_RANK: in micro-batches,
    gradients accumulated), and the gradients are averaged by sample count: the same optimisation
    whatever the world size, so the rate stays as it is;
  - FTL_COMM_COMPRESS=bf16 (or bf16-ef, with error feedback) sends GradientAverager's float32 buckets as
    bf16 (half the bytes); the step's statistics and the sample counts stay exact;
  - --loader: a torch DataLoader with two worker processes fetches the coming steps' samples ahead
    (ftl.torch.ElasticLoader); a step still gets exactly its own indices, across rescales too (the
    logged indices are then those of the samples the DataLoader delivered). A step's batch is then the
    rank's whole share (FTL_MAX_BATCH_PER_RANK does not cut it into micro-batches);
  - agent.on_data_epoch_end prints a line each time a step completes a data epoch.

Settings: the agent's and the job's FTL_* variables, and
  FTL_STEPS (300), FTL_BATCH samples per rank per step (32), FTL_STEP_SLEEP_MS extra time per step (0),
  FTL_LOG_INDICES=1 (log each step attempt's indices), FTL_OPTIMIZER adam|sgd (adam), FTL_LR (0.005, for 4 workers),
  FTL_DDP=1: the model in torch's DistributedDataParallel on ftl's process group (ftl.torch.process_group),
  which averages the gradients in backward(), instead of GradientAverager.
  FTL_EXTRA_STATE_MB (0): that many MiB more job state (agent.register, as the C example's "ballast"): synced
  and checkpointed like the model, left out of the digest (bench/rescale/rescale.py's join figure).
  Importing torch takes seconds: set FTL_EXPECTED_WORKERS to the number of workers a job starts with, so
  that its first view waits for them rather than the first worker training alone.
Output on stdout, one JSON object per line, as examples/train_softmax.c prints it (tests/agent/workers.py
reads both): a line per completed step {"worker","step","rank","world","epoch","samples","loss",
"accuracy","digest","t"} (digest: parameters and optimizer state, equal on every rank after every step),
with FTL_LOG_INDICES=1 a line per step attempt {"worker","step","data_epoch","epoch","rank","attempt",
"pos","indices"}, a line per data epoch completed {"worker","data_epoch_end","step"}, and at the end
{"worker","final":true,"steps","test_loss","test_accuracy","digest","t"} (--loader: and "prefetch_dropped",
the prefetched batches the DataLoader fetched in vain: found stale after a rescale or a retried step).
SIGTERM or SIGINT: finish the step, leave the cluster gracefully, exit 0; `ftlctl leave`: exit 0 too.
Exit 1 when training cannot go on, 2 for a bad setting.
"""
import argparse
import json
import os
import signal
import socket
import sys
import time

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
# Blocked before any thread exists (the agent's and torch's inherit the mask), picked up between steps,
# so a stop never interrupts a step half way.
signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

import ftl  # noqa: E402
import ftl.torch  # noqa: E402

SPLIT_SEED = 20240501  # the same on every worker: the same train/test split
SAMPLER_SEED = 7       # the same on every worker: the same epoch orders
BASE_WORLD = 4         # the learning rate FTL_LR is tuned for this many workers


def env_number(var, fallback, cast=int):
    value = os.environ.get(var, "")
    try:
        return cast(value) if value else fallback
    except ValueError:
        print(f"torch_digits: {var}={value}: expected a number", file=sys.stderr)
        sys.exit(2)


def digits():
    """(train, test) TensorDatasets of the digits, pixels scaled to [0, 1]."""
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x / 16.0, y, test_size=0.2, random_state=SPLIT_SEED,
                                                        stratify=y)
    as_set = lambda a, b: TensorDataset(torch.tensor(a, dtype=torch.float32), torch.tensor(b))  # noqa: E731
    return as_set(x_train, y_train), as_set(x_test, y_test)


def emit(record):
    record["t"] = round(time.time(), 3)
    print(json.dumps(record, separators=(",", ":")), flush=True)


class Trainer:
    def __init__(self, agent, name, is_loader=False):
        self.agent, self.name = agent, name
        self.steps = env_number("FTL_STEPS", 300)
        self.batch_per_rank = env_number("FTL_BATCH", 32)
        self.sleep_s = env_number("FTL_STEP_SLEEP_MS", 0) / 1000
        self.is_logging_indices = env_number("FTL_LOG_INDICES", 0) == 1
        self.train, self.test = digits()
        torch.manual_seed(0)  # the same start everywhere (rank 0's state is synced to the others anyway)
        self.model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
        extra_mb = env_number("FTL_EXTRA_STATE_MB", 0)
        if extra_mb > 0:  # stands in for a larger model's state; float32: 2^18 of them to a MiB
            self.ballast = torch.zeros(extra_mb << 18)
            agent.register("ballast", self.ballast)
        lr = env_number("FTL_LR", 0.005, float)
        kind = os.environ.get("FTL_OPTIMIZER", "adam")
        if kind not in ("adam", "sgd"):
            print(f"torch_digits: FTL_OPTIMIZER={kind}: expected adam or sgd", file=sys.stderr)
            sys.exit(2)
        self.optimizer = (torch.optim.Adam(self.model.parameters(), lr=lr) if kind == "adam" else
                          torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9))
        self.ddp = None
        if env_number("FTL_DDP", 0) == 1:  # DDP on ftl's group; ElasticState re-points it at every view
            self.ddp = DistributedDataParallel(self.model, process_group=ftl.torch.process_group(agent))
        self.state = ftl.torch.ElasticState(agent, self.ddp or self.model, self.optimizer)
        self.grads = None if self.ddp else ftl.torch.GradientAverager(agent, self.model)
        policy = None if os.environ.get("FTL_GLOBAL_BATCH", "0") not in ("", "0") else "sqrt"
        self.scale_lr = ftl.torch.lr_scaling(self.optimizer, lr, policy, warmup_steps=10, base_world=BASE_WORLD)
        agent.set_sampler(len(self.train), self.batch_per_rank, SAMPLER_SEED)
        # --loader: each sample carries its index, so that the log says what the DataLoader delivered.
        self.loader = (ftl.torch.ElasticLoader(agent, TensorDataset(*self.train.tensors, torch.arange(len(self.train))),
                                               num_workers=2) if is_loader else None)
        agent.on_data_epoch_end(lambda epoch: emit({"worker": name, "data_epoch_end": epoch,
                                                    "step": agent.job_status()["step"]}))
        self.last = None  # (info, samples, loss, accuracy) of the last successful step

    def samples(self, info):
        """(batches, the dataset indices in them): the DataLoader's (--loader), or fetched here in micro-batches."""
        if self.loader is None:
            if self.ddp:
                return [self.ddp_batch(info)], [int(i) for i in info.indices]
            return list(ftl.torch.micro_batches(self.train, info)), [int(i) for i in info.indices]
        fetched = self.loader.batch(info)
        if fetched is None:
            return ([self.train[0:0]] if self.ddp else []), []  # DDP's backward must still run: collectives
        x, y, indices = fetched
        return [(x, y)], indices.tolist()

    def train_step(self, info):
        """One step (agent.execute). The model and optimizer change only after every collective succeeded."""
        batches, indices = self.samples(info)
        if self.is_logging_indices:  # before the collectives: a rank that dies in them has still logged
            emit({"worker": self.name, "step": info.step, "data_epoch": info.data_epoch, "epoch": info.view_epoch,
                  "rank": info.rank, "attempt": info.attempt, "pos": info.sample_pos, "indices": indices})
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        stats = torch.zeros(3, dtype=torch.float64)  # loss sum, correct, samples
        for x, y in batches:  # one batch unless FTL_MAX_BATCH_PER_RANK
            logits = (self.ddp or self.model)(x)
            loss = F.cross_entropy(logits, y, reduction="sum")
            (loss / max(len(info.indices), 1)).backward()  # accumulated: the mean over this rank's samples
            stats += torch.tensor([loss.item(), (logits.argmax(1) == y).sum().item(), len(y)])
        if self.sleep_s:
            time.sleep(self.sleep_s)
        self.agent.allreduce(stats)  # sum over the world
        samples = self.grads.average(samples=len(info.indices)) if self.grads else stats[2].item()
        if samples > 0:  # every rank now holds the same gradients: every rank makes the same update
            self.scale_lr(info)
            self.optimizer.step()
        n = stats[2].item()
        self.last = (info, n, stats[0].item() / n if n else 0.0, stats[1].item() / n if n else 0.0)

    def ddp_batch(self, info):
        """This rank's samples of the step; an empty batch when it has none (DDP's backward must still run,
        its allreduces are collectives)."""
        batch = ftl.torch.batch(self.train, info)
        if batch is None:
            x, y = self.train[0:0]
            return x, y
        return batch

    def print_step(self):
        info, samples, loss, accuracy = self.last
        emit({"worker": self.name, "step": info.step, "rank": info.rank, "world": info.world_size,
              "epoch": info.view_epoch, "samples": int(samples), "loss": round(loss, 6),
              "accuracy": round(accuracy, 6), "digest": self.state.digest()})

    def print_final(self, steps):
        self.model.eval()
        x, y = self.test.tensors
        with torch.no_grad():
            logits = self.model(x)
            loss = F.cross_entropy(logits, y).item()
            accuracy = (logits.argmax(1) == y).float().mean().item()
        final = {"worker": self.name, "final": True, "steps": steps, "test_loss": round(loss, 6),
                 "test_accuracy": round(accuracy, 6), "digest": self.state.digest()}
        if self.loader is not None:
            final["prefetch_dropped"] = self.loader.dropped
        emit(final)

    def run(self):
        """Trains until the job has done self.steps steps; returns the exit status."""
        while (done := self.agent.job_status()["step"]) < self.steps:
            if signal.sigtimedwait(STOP_SIGNALS, 0) is not None:
                print(f"torch_digits: {self.name}: stopping after step {done}: leaving the job", file=sys.stderr)
                self.agent.leave()
                return 0
            try:
                self.agent.execute(self.train_step)
            except ftl.Error as e:
                if self.agent.has_left:  # `ftlctl leave` (a Kubernetes preStop hook), or a spare at the job's end
                    why = e if e.code == ftl.errors.STATE_LOST else "ftlctl leave"
                    print(f"torch_digits: {self.name}: left the job after step {done} ({why})", file=sys.stderr)
                    return 0
                print(f"torch_digits: {self.name}: {e}", file=sys.stderr)
                return 1
            self.print_step()
        # The last step: wait until every rank has finished training. A worker that leaves aborts the
        # collectives its view still runs, so without it a fast finisher could cut short a slower rank's
        # last step. Changes no state, so running it again after a failure is harmless.
        try:
            self.agent.execute(lambda info: self.agent.barrier())
        except ftl.Error as e:
            print(f"torch_digits: {self.name}: finishing: {e}", file=sys.stderr)
        self.print_final(done)
        return 0


def main():
    p = argparse.ArgumentParser(description="data-parallel PyTorch training with ftl (settings: FTL_* variables)")
    p.add_argument("--loader", action="store_true", help="fetch samples ahead with a DataLoader and two workers")
    args = p.parse_args()
    torch.set_num_threads(1)  # one core per worker: the workers share the machine
    name = os.environ.get("FTL_NAME") or socket.gethostname()
    try:
        agent = ftl.Agent()
    except ftl.ConfigError as e:
        print(f"torch_digits: {e}", file=sys.stderr)
        return 2
    trainer = Trainer(agent, name, args.loader)
    try:
        with agent:
            return trainer.run()
    except ftl.Error as e:
        print(f"torch_digits: {name}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
