"""NET: multi-GPU and multi-node communication."""
from __future__ import annotations

from gpulint.rulekit import (
    Example, Expect, GPU_LAUNCHERS, OFF_GPU_HOST, Rule, Severity, Workload, fixes, hookimpl, multi_gpu, on_gpu,
    toy_workload, unpriced,
)


class GlooBackendOnGpu(Rule):
    """A process group for CUDA training uses Gloo (or MPI) instead of NCCL.

    What it does:
        Finds ``torch.distributed.init_process_group`` whose backend is literally ``"gloo"`` or
        ``"mpi"`` in a workload that trains on a GPU. A per-device backend string that includes
        NCCL for CUDA (``"cpu:gloo,cuda:nccl"``) and a backend chosen at run time are left alone;
        with no backend given, PyTorch picks NCCL for CUDA. A file that puts the model on an XLA
        device or a Gaudi HPU (torch_xla's gloo with ``init_method="xla://"``) is that device's path
        and is left alone. Info for a tutorial-sized workload
        (a benchmark dataset such as MNIST, or a model under 5M parameters), whose all-reduce is tiny.
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
        Example(
            """\
import torch
import torch.distributed as dist
if torch.cuda.is_available():
    dist.init_process_group("nccl")
else:
    dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(model.cuda())
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
            title="Gloo only in the branch without CUDA",
        ),
        Example(
            """\
import torch
import torch.distributed as dist
import torch.distributed.rpc as rpc
dist.init_process_group("gloo")
rpc.init_rpc("trainer", rank=0, world_size=2)
model = model.cuda()
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
            title="a parameter-server / RPC setup keeps its CPU group on Gloo",
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
        # files that put the model on an XLA device or a Gaudi HPU: their process group (torch_xla's gloo with
        # init_method="xla://") coordinates that device, while the workload's CUDA path sits in another file
        other_device = {x.loc.path for x in wl.code_facts("other_accelerator")}
        for f in wl.code_facts("process_group"):
            backend = f.value.get("backend")
            attrs = f.attrs or {}
            if attrs.get("rpc"):
                continue  # RPC / parameter-server code keeps its CPU-side group on Gloo on purpose
            if f.loc.path in other_device:
                continue
            if set(attrs.get("guards") or ()) & (OFF_GPU_HOST | {"debug"}):
                continue  # the branch that runs without CUDA (or never, or only when debugging)
            if isinstance(backend, str) and backend in ("gloo", "mpi"):
                # a tutorial-sized model's gradients are a few kilobytes: the backend is worth fixing, not a warning
                toy = toy_workload(wl)
                yield self.finding(f.loc, f"init_process_group uses the {backend} backend for CUDA training; NCCL is the GPU backend"
                                   + (f" (tutorial-sized: {toy}; its all-reduce is tiny)" if toy else ""),
                                   symbol=f"{f.key}:{backend}", workload=wl.name, severity=Severity.INFO if toy else None,
                                   cost=unpriced("No hourly figure: the slowdown depends on model size and interconnect."),
                                   fix=fixes.nccl_backend(f, wl))


class DataParallelInsteadOfDDP(Rule):
    """torch.nn.DataParallel is used for multi-GPU training.

    What it does:
        Finds ``torch.nn.DataParallel(...)`` (under any import alias) in the code of a training workload.
        A warning when the compute target has several GPUs per machine; info when the GPU count is
        not known (a script nothing deploys) or the workload is tutorial-sized. Silent in dead or
        CPU branches, inference hooks, and the single-process fallback of a distributed script.
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
        Example(
            {"train.py": """\
import torch
model = build().cuda()
if torch.cuda.device_count() > 1:
    model = torch.nn.DataParallel(model)
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
""", "infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "g5.2xlarge"\n}\n'},
            title="DataParallel only with more than one GPU, on a one-GPU instance",
        ),
        Example(
            """\
import torch
model = build().cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()


def model_fn(model_dir):
    net = torch.nn.DataParallel(build())
    return net.cuda().eval()
""",
            title="DataParallel in a SageMaker inference hook",
        ),
        Example(
            """\
import torch
model = build()
if args.distributed:
    model = torch.nn.parallel.DistributedDataParallel(model.cuda(args.gpu), device_ids=[args.gpu])
elif args.gpu is not None:
    model = model.cuda(args.gpu)
else:
    model = torch.nn.DataParallel(model).cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
""",
            title="the non-distributed fallback of a script whose DDP path is one flag away",
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
            expect=[Expect("train.py", 2, ("DataParallel", "GPUs per machine are not known"))],
            title="nothing says how many GPUs: info",
        ),
        Example(
            {"train.py": """\
import torch.nn as nn
model = nn.DataParallel(model).cuda()
for x in loader:
    model(x).sum().backward()
    opt.step()
""", "infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "g5.12xlarge"\n}\n'},
            expect=[Expect("train.py", 2, "use DistributedDataParallel")],
            title="four A10G per machine: a warning",
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not wl.trains or not on_gpu(wl):
            return
        several = multi_gpu(wl)  # False: one GPU per machine; None: nothing says
        for f in wl.code_facts("dataparallel"):
            attrs = f.attrs or {}
            guards = set(attrs.get("guards") or ())
            if guards & OFF_GPU_HOST or _inference_hook(attrs.get("function") or ""):
                continue  # never runs, runs without a GPU, or wraps a model for serving (no gradients)
            if "multi_gpu" in guards and several is False:
                continue  # `if device_count() > 1:` on a one-GPU node: DataParallel is never built
            if attrs.get("ddp_fallback"):
                continue  # ``if args.distributed: DDP(...) else: DataParallel(...)``: the script's DDP is one flag away
            if "multi_gpu" in guards and (wl.code_facts("ddp") or any(l.value.get("tool") in GPU_LAUNCHERS for l in wl.launchers)):
                continue  # the non-distributed fallback of a script that runs distributed (DDP branch, torchrun)
            toy = toy_workload(wl)
            # the cost is on machines with several GPUs: a warning where the compute says so, else advice
            note = f" (tutorial-sized: {toy})" if toy else \
                " (the GPUs per machine are not known: this matters on multi-GPU machines)" if several is None else \
                " (one GPU per machine here: DataParallel only adds overhead)" if several is False else ""
            yield self.finding(f.loc, "torch.nn.DataParallel drives all GPUs from one process through GPU 0; use DistributedDataParallel"
                               + note, symbol=f.key, workload=wl.name, severity=Severity.INFO if toy or not several else None,
                               cost=unpriced("No hourly figure: the gain of DDP over DataParallel depends on the model and GPU count."))


_INFERENCE_HOOKS = ("model_fn", "predict_fn", "transform_fn", "input_fn", "output_fn", "handle", "initialize")


def _inference_hook(function: str) -> bool:
    """A serving entry point (SageMaker inference toolkit, TorchServe handler) or an evaluation helper."""
    low = function.lower()
    return function in _INFERENCE_HOOKS or low.startswith(("predict", "infer", "evaluate", "eval_", "serve", "load_model", "test"))


@hookimpl
def gpulint_rules():
    return [GlooBackendOnGpu, DataParallelInsteadOfDDP]
