"""One JSON line per trained step, for the tests and benchmarks that judge a loop they did not write
(FTL_STEP_LINES=1; nothing otherwise): {"worker","step","rank","world","epoch","samples","loss","digest","t"},
the lines tests/agent/workers.py and bench/rescale read. Both twins of examples/torch_loop.py call it the same
way, after optimizer.step(); on ftl's group a step counts once it committed (ftl.torch.last_commit() is a new
one: a step dropped by loop mode's commit point prints nothing), with the step number, rank, world size and
view ("epoch") it committed in.
FTL_STEP_SLEEP_MS: that much longer each forward pass (a job slow enough to kill and join in)."""
import hashlib
import json
import os
import time

import torch
import torch.distributed as dist

try:  # a setting of this helper's own, which ftl.Agent() would refuse unless declared
    import ftl
    ftl.add_known_setting("FTL_STEP_LINES")
except ImportError:  # the plain DDP twin, where ftl is not installed
    pass


def digest(model, optimizer):
    """16 hex digits over the parameters and the optimizer's state: equal on every rank after every step."""
    h = hashlib.blake2b(digest_size=8)
    tensors = list(model.parameters()) + [v for s in optimizer.state.values() for _, v in sorted(s.items())
                                          if torch.is_tensor(v)]
    for t in tensors:
        h.update(t.detach().reshape(-1).contiguous().view(torch.uint8).cpu().numpy().tobytes())
    return h.hexdigest()


class StepLines:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.is_on = os.environ.get("FTL_STEP_LINES") == "1"
        self.sleep_s = int(os.environ.get("FTL_STEP_SLEEP_MS") or 0) / 1000
        self.worker = os.environ.get("FTL_NAME") or os.environ.get("RANK", "0")
        if self.sleep_s:  # in the forward pass, where a larger model spends its step
            model.register_forward_pre_hook(lambda *_: time.sleep(self.sleep_s))
        self.agent = None
        if dist.is_initialized() and dist.get_backend() == "ftl":
            import ftl.torch
            self.agent = ftl.torch.agent()
        self.steps = 0     # the next step's number
        self.last = None   # on ftl: ftl.torch.last_commit() at the last line

    def after_step(self, loss, samples):
        if not self.is_on:
            return
        step, rank, world, view = self.steps, dist.get_rank(), dist.get_world_size(), 0
        if self.agent is not None:
            import ftl.torch
            info = ftl.torch.last_commit(self.agent)
            if info is None or info is self.last:
                return  # dropped, not committed: it runs again
            self.last = info
            step, rank, world, view = info.step, info.rank, info.world_size, info.view_epoch
        self.steps = step + 1
        print(json.dumps({"worker": self.worker, "step": step, "rank": rank, "world": world,
                          "epoch": view, "samples": samples, "loss": round(loss.item(), 6),
                          "digest": digest(self.model, self.optimizer), "t": round(time.time(), 3)},
                         separators=(",", ":")), flush=True)
