"""What a Ray Train script says: how many workers it starts and whether they hold GPUs (``ScalingConfig``), how often
a failed run is retried (``FailureConfig``), and whether it checkpoints and resumes. Called by the device,
distributed and checkpoint passes.

- ``ScalingConfig(num_workers=, use_gpu=, resources_per_worker={"GPU": n})``: the ``ray.scaling`` fact, and GPU use
  where it asks for GPUs (``several`` for two or more in all). Ray starts one worker process per GPU and wraps the
  model in DDP itself (``ddp``): the one ``python`` a launcher starts is the driver, not the only GPU process.
- ``ray.train.report(metrics, checkpoint=Checkpoint.from_directory(...))`` saves a checkpoint (a ``report``
  without one saves nothing); ``RunConfig(checkpoint_config=CheckpointConfig(...))`` keeps and, for the trainers
  that checkpoint themselves (``checkpoint_frequency``, ``checkpoint_at_end``), writes them: a save as well.
  ``ray.train.get_checkpoint()`` is the resume: what a restarted worker reads back.
- ``FailureConfig(max_failures=)``: the ``ray.failure`` fact (Ray restarts the run from its latest reported
  checkpoint that many times; -1 is without limit).
"""
from __future__ import annotations

from typing import Any

from gpulint.read.python.common import Facts, norm, owner
from gpulint.read.python.index import Call

_PREFIXES = ("ray.train.", "ray.air.")
#: Ray trainers that build a framework trainer in a function of the script (``trainer_init_per_worker`` returns a
#: ``transformers.Trainer``; ``LightningTrainer`` takes a config) and run its training loop themselves on ``fit()``
_WRAPPED = {"ray.train.huggingface.HuggingFaceTrainer": "hf_trainer", "ray.train.huggingface.TransformersTrainer": "hf_trainer",
            "ray.train.hf_transformers.TransformersTrainer": "hf_trainer", "ray.train.lightning.LightningTrainer": "lightning"}
#: the calls that say the file runs Ray Train (its trainers, its config, its per-worker helpers)
RAY_TRAIN = {"ray.train.torch.TorchTrainer", "ray.train.ScalingConfig", "ray.air.config.ScalingConfig", "ray.air.ScalingConfig",
             "ray.train.torch.prepare_model", "ray.train.lightning.RayDDPStrategy", *_WRAPPED}
SCALING = {"ray.train.ScalingConfig", "ray.air.config.ScalingConfig", "ray.air.ScalingConfig"}
FAILURE = {"ray.train.FailureConfig", "ray.air.config.FailureConfig", "ray.air.FailureConfig"}
CHECKPOINT_CONFIG = {"ray.train.CheckpointConfig", "ray.air.config.CheckpointConfig", "ray.air.CheckpointConfig"}
RUN_CONFIG = {"ray.train.RunConfig", "ray.air.config.RunConfig", "ray.air.RunConfig", "ray.tune.RunConfig"}
REPORT = {"ray.train.report", "ray.air.session.report", "ray.train.context.report"}
GET_CHECKPOINT = {"ray.train.get_checkpoint", "ray.air.session.get_checkpoint"}


def _ray(q: str | None) -> bool:
    return bool(q) and q.startswith(_PREFIXES)


# -- devices ----------------------------------------------------------------------------------------
def scaling(f: Facts) -> None:
    """Each ScalingConfig: its workers and their GPUs (``ray.scaling``), and GPU use where it asks for them."""
    for c in f.ix.calls_to(*SCALING):
        workers = _count(f, c, "num_workers", 0)
        use_gpu = f.val(c, "use_gpu") if f.present(c, "use_gpu") else False
        per = _gpus_per_worker(f, c)
        gpu = True if use_gpu is True or (isinstance(per, (int, float)) and per > 0) else \
            False if use_gpu is False and per in (None, 0) else None
        value = {"num_workers": workers, "use_gpu": gpu, "gpus_per_worker": per if gpu else (0 if gpu is False else None)}
        f.add("ray.scaling", value, c.node, c.qualname)
        if gpu:
            total = workers * (per or 1) if isinstance(workers, int) else None
            f.add("uses_gpu", {"via": "ray.train", **({"several": True} if isinstance(total, (int, float)) and total > 1 else {})},
                  c.node, c.qualname)
        elif gpu is False:
            # Ray hides every GPU from workers that asked for none (use_gpu defaults to False): whatever the training
            # function does with CUDA, it runs on CPUs
            f.add("cpu_only", {"via": "ray.train ScalingConfig without GPUs", "declared": True}, c.node, c.qualname)


def _count(f: Facts, c: Call, kw: str, pos: int | None) -> int | None:
    v = f.val(c, kw, pos)
    return v if type(v) is int else None


def _gpus_per_worker(f: Facts, c: Call) -> Any:
    """``resources_per_worker={"GPU": 2}``: GPUs per worker; None when not given or not readable (1 with use_gpu)."""
    res = f.val(c, "resources_per_worker")
    if isinstance(res, dict):
        n = res.get("GPU", res.get("gpu"))
        return n if isinstance(n, (int, float)) and not isinstance(n, bool) else None
    return None


# -- training ---------------------------------------------------------------------------------------
def training(f: Facts) -> None:
    """``HuggingFaceTrainer(trainer_init_per_worker=...).fit()`` trains: Ray calls the returned Trainer's ``train()``,
    which the script never calls by name (Ray AIR's API, 2.0-2.6)."""
    ix = f.ix
    for c in ix.calls_to(*_WRAPPED):
        if not c.assigned_to:
            continue
        fit = next((o for o in ix.calls if o.attr == "fit" and o.receiver == c.assigned_to and o.scope == c.scope
                    and o.order > c.order), None)
        if fit is not None:
            f.add("trains", {"via": _WRAPPED[c.qualname]}, fit.node, c.qualname, **owner(ix, fit))


# -- distributed ------------------------------------------------------------------------------------
def distributed(f: Facts) -> None:
    """Ray Train's DDP (once per file) and its FailureConfig."""
    for c in f.ix.calls_to(*RAY_TRAIN):
        f.add("ddp", {"via": "ray.train"}, c.node, c.qualname)
        break
    for c in f.ix.calls_to(*FAILURE):
        f.add("ray.failure", {"max_failures": _count(f, c, "max_failures", 0)}, c.node, c.qualname)


# -- checkpoints ------------------------------------------------------------------------------------
def checkpoints(f: Facts) -> None:
    """``report(checkpoint=...)`` and a RunConfig's CheckpointConfig save; ``get_checkpoint()`` resumes."""
    ix = f.ix
    for c in ix.calls:
        q = c.qualname or ""
        if not _ray(q):
            continue
        if q in REPORT:
            ck = c.kwarg("checkpoint") if c.kwarg("checkpoint") is not None else c.positional(1)
            if ck is not None and not (ck.__class__.__name__ == "Constant" and getattr(ck, "value", 0) is None):
                f.add("checkpoint.save", {"via": "ray.train.report", "dir": None}, c.node, q)
        elif q in CHECKPOINT_CONFIG:
            f.add("checkpoint.save", {"via": "ray.CheckpointConfig", "dir": _storage(f, c)}, c.node, q)
        elif q in GET_CHECKPOINT:
            f.add("checkpoint.resume", {"via": "ray.train.get_checkpoint"}, c.node, q)


def _storage(f: Facts, cfg: Call) -> Any:
    """The ``storage_path`` of the RunConfig a CheckpointConfig is given to, when it is a literal."""
    for c in f.ix.calls_to(*RUN_CONFIG):
        if c.kwarg("checkpoint_config") is not None and c.node.lineno <= cfg.node.lineno <= (c.node.end_lineno or 0):
            v = norm(f.val(c, "storage_path"))
            return v if isinstance(v, str) else None
    return None
