"""The Python package's CUDA-tensor path on one GPU: a one-worker ftl job under FTL_COMM=nccl whose model,
optimizer state, gradients and statistics are CUDA tensors, through ftl.torch (ElasticState registers them as
device state, GradientAverager allreduces the gradient buckets on the GPU) and agent.allreduce. Checks that
the steps run, the loss falls, the state stays on the GPU, and a host tensor under NCCL is refused with the
error naming the fix. One JSON line. With --ddp the model is in DistributedDataParallel on
ftl.torch.process_group(agent) instead of GradientAverager: DDP's bucket allreduces on CUDA tensors go
through the group's asynchronous path (ftl_allreduce with a request, on the nccl communicator, a completion thread).

Run by scripts/test-gpu.sh with FTL_LIBRARY=<build>/libftl/libftl.so and PYTHONPATH=python/src; exit 77
when torch has no CUDA device."""

import json
import os
import socket
import sys
import tempfile
import time


def main(is_ddp):
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch is not importable: {e}")
        return 77
    if not torch.cuda.is_available():
        print(f"SKIP: torch {torch.__version__} sees no CUDA device")
        return 77
    import ftl
    import ftl.torch
    import torch.nn.functional as F

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run_dir = tempfile.mkdtemp(prefix="ftl-torch-cuda-")
    agent = ftl.Agent(name="cuda0", bind=f"127.0.0.1:{port}", run_dir=run_dir, comm="nccl", insecure=True)
    dev = torch.device("cuda", 0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 32, generator=g)
    y = (x[:, :10].argmax(1)).long()  # a learnable rule
    data = torch.utils.data.TensorDataset(x.to(dev), y.to(dev))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    net = model
    if is_ddp:
        net = torch.nn.parallel.DistributedDataParallel(model, process_group=ftl.torch.process_group(agent))
    state = ftl.torch.ElasticState(agent, net, opt)
    grads = None if is_ddp else ftl.torch.GradientAverager(agent, model)
    agent.set_sampler(len(data), 128, seed=1)
    losses, step_ms = [], []

    def step(info):
        t0 = time.monotonic()
        opt.zero_grad(set_to_none=True)
        xb, yb = ftl.torch.batch(data, info)
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        stats = torch.stack([loss.detach() * len(yb), torch.tensor(float(len(yb)), device=dev)])
        agent.allreduce(stats)  # a CUDA tensor through NCCL
        if grads is not None:
            grads.average(samples=len(info.indices))
        opt.step()
        torch.cuda.synchronize()
        losses.append((stats[0] / stats[1]).item())
        step_ms.append((time.monotonic() - t0) * 1e3)

    refused = ""
    with agent:
        for _ in range(60):
            agent.execute(step)
        try:
            agent.execute(lambda info: agent.allreduce(torch.zeros(4)))
        except ftl.Error as e:
            refused = str(e)
        digest = state.digest()
    on_gpu = all(p.is_cuda for p in model.parameters())
    out = {"test": "torch_cuda_ddp" if is_ddp else "torch_cuda", "torch": torch.__version__, "steps": len(losses), "first_loss": losses[0],
           "last_loss": losses[-1], "step_ms_median": sorted(step_ms)[len(step_ms) // 2], "state_on_gpu": on_gpu,
           "digest": digest, "host_tensor_refused": "move it to the GPU" in refused}
    print(json.dumps(out), flush=True)
    ok = len(losses) == 60 and losses[-1] < 0.7 * losses[0] and on_gpu and out["host_tensor_refused"]
    print("PASS" if ok else f"FAIL: {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))
    sys.exit(main("--ddp" in sys.argv[1:]))
