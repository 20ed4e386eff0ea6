"""NET: multi-GPU and multi-node communication."""
from __future__ import annotations

from gpulint.cost import unpriced
from gpulint.hookspecs import hookimpl
from gpulint.model import Severity
from gpulint.rule import Example, Expect, Rule
from gpulint.workloads import Workload

from gpulint.rulekit import on_gpu


class GlooBackendOnGpu(Rule):
    """A process group for CUDA training uses Gloo (or MPI) instead of NCCL.

    What it does:
        Finds ``torch.distributed.init_process_group`` whose backend is literally ``"gloo"`` or
        ``"mpi"`` in a workload that trains on a GPU. A per-device backend string that includes
        NCCL for CUDA (``"cpu:gloo,cuda:nccl"``) and a backend chosen at run time are left alone;
        with no backend given, PyTorch picks NCCL for CUDA.
    Why it costs money:
        Gloo moves CUDA tensors through host memory and TCP; NCCL uses NVLink/NVSwitch inside a
        node and RDMA between nodes. Gradient all-reduce becomes the bottleneck and every GPU waits.
    How to fix:
        ``dist.init_process_group(backend="nccl")`` (or leave the backend out), and keep Gloo only
        for CPU-side collectives (``backend="cpu:gloo,cuda:nccl"``).
    Cost model:
        No hourly figure: the slowdown depends on model size and interconnect (see NET004 for the
        all-reduce estimate once the instance is known).
    Sources:
        PyTorch distributed docs (pytorch.org/docs/stable/distributed.html): "Use the NCCL backend
        for distributed GPU training. Use the Gloo backend for distributed CPU training."
    """

    code = "NET005"
    name = "gloo-backend-on-gpu"
    severity = Severity.WARNING
    family = "NET"
    since = "0.1.0"

    VALID = [
        Example(
            """\
import torch.distributed as dist
dist.init_process_group(backend="nccl")
model = DDP(model.cuda())
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
        ),
        Example(
            """\
import torch.distributed as dist
dist.init_process_group("gloo")
model = model.cpu()
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
            title="CPU training may use Gloo",
        ),
    ]
    INVALID = [
        Example(
            """\
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(model.cuda())
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
            expect=[Expect("train.py", 3, "gloo")],
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not wl.trains or not on_gpu(wl):
            return
        for f in wl.code_facts("process_group"):
            backend = f.value.get("backend")
            if isinstance(backend, str) and backend in ("gloo", "mpi"):
                yield self.finding(f.loc, f"init_process_group uses the {backend} backend for CUDA training; NCCL is the GPU backend",
                                   symbol=f"{f.key}:{backend}", workload=wl.name,
                                   cost=unpriced("No hourly figure: the slowdown depends on model size and interconnect."))


class DataParallelInsteadOfDDP(Rule):
    """torch.nn.DataParallel is used for multi-GPU training.

    What it does:
        Finds ``torch.nn.DataParallel(...)`` (under any import alias) in the code of a training workload.
    Why it costs money:
        DataParallel is single-process and multi-threaded: it scatters inputs and gathers outputs
        through GPU 0 every step and is bound by the Python GIL, so GPUs 1..N idle part of each
        step and GPU 0 runs out of memory first. PyTorch recommends DistributedDataParallel even
        on a single node.
    How to fix:
        Launch one process per GPU and wrap with DDP::

            torchrun --nproc_per_node 8 train.py
            dist.init_process_group("nccl")
            model = DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])

        or let accelerate / Lightning / HF Trainer do it.
    Cost model:
        No hourly figure here; DDP is commonly reported markedly faster than DataParallel on the
        same GPUs, and gpulint does not guess by how much for this model.
    Sources:
        PyTorch DataParallel docs: "It is recommended to use DistributedDataParallel, instead of
        this class, to do multi-GPU training, even if there is only a single node."
    """

    code = "NET006"
    name = "dataparallel-instead-of-ddp"
    severity = Severity.WARNING
    family = "NET"
    since = "0.1.0"

    VALID = [
        Example(
            """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(model.cuda())
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
        ),
    ]
    INVALID = [
        Example(
            """\
import torch.nn as nn
model = nn.DataParallel(model).cuda()
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
            expect=[Expect("train.py", 2, "DataParallel")],
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not wl.trains or not on_gpu(wl):
            return
        for f in wl.code_facts("dataparallel"):
            yield self.finding(f.loc, "torch.nn.DataParallel drives all GPUs from one process through GPU 0; use DistributedDataParallel",
                               symbol=f.key, workload=wl.name,
                               cost=unpriced("No hourly figure: the gain of DDP over DataParallel depends on the model and GPU count."))


@hookimpl
def gpulint_rules():
    return [GlooBackendOnGpu, DataParallelInsteadOfDDP]
