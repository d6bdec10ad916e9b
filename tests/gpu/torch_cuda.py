"""The Python package's CUDA-tensor path on one GPU: a one-worker ftl job under FTL_COMM=nccl whose model,
optimizer state, gradients and statistics are CUDA tensors, through ftl.torch (ElasticState registers them as
device state, GradientAverager allreduces the gradient buckets on the GPU) and agent.allreduce. Checks that
the steps run, the loss falls, the state stays on the GPU, and a host tensor under NCCL is refused with the
error naming the fix. One JSON line. With --ddp the model is in DistributedDataParallel on
ftl.torch.process_group(agent) instead of GradientAverager: DDP's bucket allreduces on CUDA tensors go
through the group's asynchronous path (ftl_allreduce with a request, on the nccl communicator, a completion thread).

With --loop the same model trains in loop mode (the program's own loop over ftl.torch.steps, batches from
an ElasticSampler's DataLoader over CUDA tensors, DDP on ftl.torch.init_process_group's group, the step's
loss through dist.all_reduce, optimizer.step() the commit point); --cpu runs that on the CPU under tcp, to
try the script where there is no GPU.

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


def loop_main(on_cpu):
    """Loop mode on CUDA tensors: one JSON line, the same checks as main()."""
    import torch
    if not on_cpu and not torch.cuda.is_available():
        print(f"SKIP: torch {torch.__version__} sees no CUDA device")
        return 77
    import torch.distributed as dist
    import torch.nn.functional as F
    import ftl
    import ftl.torch

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dev = torch.device("cpu") if on_cpu else torch.device("cuda", 0)
    agent = ftl.Agent(name="cuda0", bind=f"127.0.0.1:{port}", run_dir=tempfile.mkdtemp(prefix="ftl-torch-loop-"),
                      comm="tcp" if on_cpu else "nccl", insecure=True)
    ftl.torch.init_process_group(agent)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 32, generator=g)
    data = torch.utils.data.TensorDataset(x.to(dev), x[:, :10].argmax(1).long().to(dev))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
    net = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    state = ftl.torch.ElasticState(agent, net, opt)
    sampler = ftl.torch.ElasticSampler(data, seed=1)
    loader = torch.utils.data.DataLoader(data, batch_size=128, sampler=sampler)
    losses, step_ms, batches = [], [], iter(())
    for _ in ftl.torch.steps(60):
        t0 = time.monotonic()
        batch = next(batches, None)
        if batch is None:  # a new data epoch
            batches = iter(loader)
            batch = next(batches)
        xb, yb = batch
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        stats = torch.stack([loss.detach() * len(yb), torch.tensor(float(len(yb)), device=dev)])
        dist.all_reduce(stats)
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        losses.append((stats[0] / stats[1]).item())
        step_ms.append((time.monotonic() - t0) * 1e3)
    refused = ""
    if not on_cpu:
        try:
            dist.all_reduce(torch.zeros(4))
        except ftl.Error as e:
            refused = str(e)
    digest = state.digest()
    on_device = all(p.device.type == dev.type for p in model.parameters())
    dist.destroy_process_group()
    out = {"test": "torch_cuda_loop" if not on_cpu else "torch_cpu_loop", "torch": torch.__version__,
           "steps": len(losses), "first_loss": losses[0], "last_loss": losses[-1],
           "step_ms_median": sorted(step_ms)[len(step_ms) // 2], "state_on_device": on_device, "digest": digest,
           "host_tensor_refused": on_cpu or "move it to the GPU" in refused}
    print(json.dumps(out), flush=True)
    ok = len(losses) == 60 and losses[-1] < 0.7 * losses[0] and on_device and out["host_tensor_refused"]
    print("PASS" if ok else f"FAIL: {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))
    if "--loop" in sys.argv[1:]:
        sys.exit(loop_main("--cpu" in sys.argv[1:]))
    sys.exit(main("--ddp" in sys.argv[1:]))
