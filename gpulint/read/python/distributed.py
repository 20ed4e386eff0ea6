"""How the work is spread over GPUs: the ``process_group``, ``dataparallel``, ``ddp`` and ``sharding`` facts.

torch.distributed process groups and their backend, DataParallel (and whether a DDP path sits on the other
side of its ``if``), DDP, Ray Train (frameworks/ray.py), JAX's pmap (frameworks/jax.py), FSDP and its sharding stage: one subject,
read from the torch calls; then TensorFlow's tf.distribute strategies and Horovod (frameworks/keras.py).
"""
from __future__ import annotations

from gpulint.read.python.common import Facts
from gpulint.read.python.frameworks import jax, keras, ray
from gpulint.read.python.index import UNKNOWN, Call, OneOf, dotted

DATAPARALLEL = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
FUNCTIONAL_DATAPARALLEL = {"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"}
RPC_INIT = {"torch.distributed.rpc.init_rpc", "torch.distributed.rpc.api.init_rpc"}
DDP = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
FSDP = {"torch.distributed.fsdp.FullyShardedDataParallel", "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard"}
INIT_PG = {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}


def distributed(f: Facts) -> None:
    ix = f.ix
    for c in ix.calls_to(*INIT_PG):
        if f.present(c, "backend") or c.positional(0) is not None:
            b = f.val(c, "backend", 0)
            # a backend chosen at run time (``"nccl" if cuda else "gloo"``) is unknown, as in any fact
            backend = None if b is UNKNOWN or isinstance(b, OneOf) else str(b).lower() if b is not None else None
            explicit = True
        else:
            backend, explicit = None, False  # torch picks NCCL for CUDA when none is given
        f.add("process_group", {"backend": backend, "explicit": explicit}, c.node, c.qualname, guards=list(c.guards),
              rpc=any(x.qualname in RPC_INIT for x in ix.calls))
    distributed = list(ix.calls_to(*DDP, *FSDP))
    for c in ix.calls_to(*DATAPARALLEL):
        f.add("dataparallel", {}, c.node, c.qualname, guards=list(c.guards), function=c.scope,
              ddp_fallback=_fallback_of(c, distributed))
    for c in ix.calls_to(*FUNCTIONAL_DATAPARALLEL):
        f.add("dataparallel", {"via": "functional"}, c.node, c.qualname, guards=list(c.guards), function=c.scope,
              ddp_fallback=_fallback_of(c, distributed))
    for c in ix.calls_to(*DDP):
        f.add("ddp", {"via": "DistributedDataParallel"}, c.node, c.qualname)
    ray.distributed(f)  # Ray Train's DDP and FailureConfig (frameworks/ray.py)
    for c in ix.calls_to(*FSDP):
        strategy = c.kwarg("sharding_strategy")
        stage = None
        if strategy is not None:
            text = dotted(strategy) or ""
            stage = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0, "HYBRID_SHARD": 3, "_HYBRID_SHARD_ZERO2": 2}.get(text.split(".")[-1])
        elif c.qualname and c.qualname.endswith("fully_shard"):
            stage = 3
        else:
            stage = 3  # FULL_SHARD is FSDP's default
        f.add("sharding", {"via": "fsdp", "stage": stage, "hybrid": "HYBRID" in (dotted(strategy) or "") if strategy is not None else False},
              c.node, c.qualname)
        f.add("ddp", {"via": "FSDP"}, c.node, c.qualname)
    keras.distributed(f)  # tf.distribute strategies, Horovod for TensorFlow
    jax.distributed(f)  # jax.pmap, jax.distributed.initialize (frameworks/jax.py)


def _fallback_of(c: Call, others: list[Call]) -> bool:
    """Is `c` on the other side of an ``if`` from one of `others`: ``if args.distributed: DDP(...) ... else:
    DataParallel(...)`` (the pytorch/examples ImageNet shape), where the script's own distributed path is a flag away."""
    sides = {id(test): side for test, side in c.conditions}
    return any(sides.get(id(test), side) != side for o in others for test, side in o.conditions)
