"""A training job the code submits to SageMaker: the ``compute.*``, ``launch`` and ``env`` facts of an
estimator (``sagemaker.pytorch.PyTorch(...)``, SDK v1 and v2 argument names) or a ``ModelTrainer``.

Unlike the other passes these facts describe another machine (the job's instances), grouped per job by
their ``target``; the job's entry script becomes a ``launch`` the linker follows into the repository.
"""
from __future__ import annotations

import ast
import posixpath
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.python.common import Facts, norm
from gpulint.read.python.index import UNKNOWN, Call, OneOf, dotted

SAGEMAKER_ESTIMATORS = {
    "sagemaker.estimator.Estimator", "sagemaker.Estimator", "sagemaker.pytorch.PyTorch", "sagemaker.pytorch.estimator.PyTorch",
    "sagemaker.huggingface.HuggingFace", "sagemaker.huggingface.estimator.HuggingFace", "sagemaker.tensorflow.TensorFlow",
    "sagemaker.estimator.Framework", "sagemaker.jumpstart.estimator.JumpStartEstimator",
}


def unique_target(f: Facts, target: str) -> str:
    """Two jobs of one file assigned to the same name are two compute targets."""
    used = {x.target for x in f.out if x.kind == "compute.target"}
    out, n = target, 2
    while out in used:
        out, n = f"{target}#{n}", n + 1
    return out


def _cpu_choice(value: Any) -> Any:
    """``"local" if local_mode else "ml.c5.xlarge"``: a run-time choice among CPU instances is CPU
    compute whichever runs (the first non-local choice stands for it); any other choice stays unknown."""
    if not isinstance(value, OneOf) or not all(isinstance(ch, str) for ch in value.choices):
        return value
    from gpulint.core.families import CPU, device_of

    choices = sorted(value.choices, key=lambda ch: (ch == "local", ch))
    return choices[0] if all(device_of(ch)[0] == CPU for ch in choices) else value


#: the SageMaker Python SDK v1 names of estimator arguments (renamed in v2, still in many archived examples)
_SM_V1_NAMES = {"instance_type": "train_instance_type", "instance_count": "train_instance_count",
                "use_spot_instances": "train_use_spot_instances", "max_wait": "train_max_wait", "max_run": "train_max_run"}


def estimators(f: Facts) -> None:
    for c in f.ix.calls_to(*SAGEMAKER_ESTIMATORS):
        target = unique_target(f, f"{c.qualname.split('.')[-1]}@{c.assigned_to or 'estimator'}")
        values = {}
        written: dict[str, str] = {}  # the keyword each value was given as (SDK v1's train_* names)
        for key in ("instance_type", "instance_count", "use_spot_instances", "max_wait", "max_run", "checkpoint_s3_uri",
                    "checkpoint_local_path", "entry_point", "source_dir", "distribution", "environment", "hyperparameters"):
            for name in (key, _SM_V1_NAMES.get(key)):
                if name and f.present(c, name):
                    values[key] = f.val(c, name)
                    written[key] = name
                    break
        loc = f.src.node_loc(c.node)

        def add(kind: str, value: Any, key: str, **attrs: Any) -> None:
            node = f.kwarg(c, written.get(key, key))
            f.out.append(Fact(kind, value, f.src.node_loc(node) if node is not None else loc, key, target, attrs))

        f.out.append(Fact("compute.target", {"source": "sagemaker", "provider": "aws", "resource": target, "role": "training"}, loc, c.qualname, target, {}))
        it = _cpu_choice(values.get("instance_type", UNKNOWN))
        add("compute.instance_type", norm(it) if isinstance(it, str) else None, "instance_type")
        opaque = f.opaque_kwargs(c)
        n = values.get("instance_count", 1 if not opaque else UNKNOWN)
        add("compute.node_count", norm(n) if isinstance(n, int) or n is UNKNOWN else None, "instance_count")
        spot = values.get("use_spot_instances", False if not opaque else UNKNOWN)
        add("compute.capacity", None if spot is UNKNOWN or isinstance(spot, dict) else ("spot" if spot else "on-demand"), "use_spot_instances")
        ckpt = {"s3_uri": norm(values.get("checkpoint_s3_uri", None)), "local_path": norm(values.get("checkpoint_local_path", None)),
                "max_wait": norm(values.get("max_wait", None)), "max_run": norm(values.get("max_run", None)),
                "s3_uri_set": "checkpoint_s3_uri" in values, "max_wait_set": "max_wait" in values, "star_kwargs": opaque}
        add("compute.checkpoint", ckpt, "checkpoint_s3_uri" if "checkpoint_s3_uri" in values else "use_spot_instances")
        ep = values.get("entry_point", UNKNOWN)
        sd = values.get("source_dir", UNKNOWN)
        script = ep if isinstance(ep, str) else None
        if script and isinstance(sd, str) and not sd.startswith(("s3://", "git")):
            script = sd.rstrip("/") + "/" + script
        hp = values.get("hyperparameters")
        args: list[str] = []
        if isinstance(hp, dict):
            for k, v in hp.items():
                args += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
        # SageMaker model parallelism turns 16 bit on for the job, whatever the script's own flags say
        mp = _sagemaker_mp_precision(values.get("distribution"))
        if mp is None and "distribution" in values and _names_precision(f, f.kwarg(c, "distribution"), c.scope):
            mp = "undecided"  # "bf16": hyperparameters["bf16"] > 0: set, but by a value read at run time
        attrs: dict[str, Any] = {}
        if ("hyperparameters" in values and not isinstance(hp, dict)) or opaque:
            attrs["args_unknown"] = True  # the script's flags are not its defaults: they are unknown
        if mp == "undecided":
            attrs["precision_undecided"] = "distribution"
        if _sagemaker_process_per_gpu(values.get("distribution")):
            attrs["process_per_gpu"] = True
        add("launch", {"tool": "sagemaker", "script": script, "args": args, "nnodes": norm(n) if isinstance(n, int) else None,
                       "nproc_per_node": None, "mixed_precision": mp if mp != "undecided" else None, "config_file": None,
                       "deepspeed_config": None}, "entry_point", **attrs)
        env = values.get("environment")
        if isinstance(env, dict):
            for k, v in env.items():
                add("env", {"name": str(k), "value": str(v)}, "environment")


def _names_precision(f: Facts, node: ast.expr | None, scope: str, depth: int = 0) -> bool:
    """Does a distribution expression (or the dict a name is bound to) hold a "bf16"/"fp16" key?"""
    if node is None or depth > 2:
        return False
    if isinstance(node, ast.Name):
        assigns = [a for a in f.ix.assigns if a.target == node.id and a.scope in (scope, "")]
        return any(isinstance(a.value, ast.expr) and _names_precision(f, a.value, a.scope, depth + 1) for a in assigns)
    return any(isinstance(n, ast.Constant) and n.value in ("bf16", "fp16") for n in ast.walk(node))


#: SageMaker distribution options that start one training process per GPU of every instance (data-parallel
#: libraries and torchrun): the SageMaker Python SDK's "Distributed training" options
_SM_PER_GPU = ("smdistributed.dataparallel", "pytorchddp", "torch_distributed")


def _sagemaker_process_per_gpu(dist: Any) -> bool:
    """Does a ``distribution`` dict start one process per GPU (``{"smdistributed": {"dataparallel":
    {"enabled": True}}}``, ``{"pytorchddp": {"enabled": True}}``, ``{"torch_distributed": {"enabled": True}}``)?"""
    if not isinstance(dist, dict):
        return False
    for path in _SM_PER_GPU:
        node: Any = dist
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get("enabled") is True:
            return True
    return False


def _sagemaker_mp_precision(dist: Any) -> str | None:
    """bf16/fp16 of SageMaker model parallelism (``distribution={"smdistributed": {"modelparallel":
    {"parameters": {"bf16": True}}}}``, also the v2 ``torch_distributed`` form), or None."""
    if not isinstance(dist, dict):
        return None
    for path in (("smdistributed", "modelparallel", "parameters"), ("torch_distributed", "parameters")):
        node: Any = dist
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            on = lambda v: v is True or v == 1 or str(v).lower() in ("1", "true")  # noqa: E731 - SMP reads ints too
            if on(node.get("bf16")):
                return "bf16"
            if on(node.get("fp16")):
                return "fp16"
            if node.get("bf16") in (False, 0) and node.get("fp16") in (False, 0, None) and "bf16" in node:
                return "fp32"
            if "bf16" in node or "fp16" in node:
                return "undecided"  # a value computed at run time
    return None


# SageMaker Python SDK ModelTrainer (sagemaker.modules in SDK 2.23x, sagemaker.train in SDK 3)
_SM_PACKAGES = ("sagemaker.modules", "sagemaker.train", "sagemaker.core.training")

MODEL_TRAINERS = {f"{p}.{m}" for p in ("sagemaker.modules.train", "sagemaker.modules.train.model_trainer",
                                        "sagemaker.train", "sagemaker.train.model_trainer")
                  for m in ("ModelTrainer", "ModelTrainer.from_recipe")}

_ML_DEFAULT_INSTANCE = "ml.m5.xlarge"  # ModelTrainer's compute when none is given (SDK docstring)


def _config_call(f: Facts, call: Call, kw: str, *names: str) -> Call | None:
    """The ``Compute(...)``-like call passed as ``kw``, written inline or assigned to a
    name first; ``names`` are class names of the SageMaker config modules."""
    node = call.kwarg(kw)
    if isinstance(node, ast.Name):
        # the assignment that runs last before the call (notebooks reassign `compute = ...` cell by cell)
        line = call.node.lineno
        assigns = [a for a in f.ix.assigns if a.target == node.id and a.scope in (call.scope, "")]
        local = [a for a in assigns if a.scope == call.scope] or assigns
        before = [a for a in local if a.node.lineno <= line]
        node = before[-1].value if before else None
    if not isinstance(node, ast.Call):
        return None
    by_node = next((c for c in f.ix.calls if c.node is node), None)
    q = by_node.qualname if by_node is not None else None
    if q and q.startswith("sagemaker.") and q.rsplit(".", 1)[-1] in names:
        return by_node
    return None


def model_trainers(f: Facts) -> None:
    """ModelTrainer(compute=Compute(...), source_code=SourceCode(...), ...): the same
    compute facts as an estimator, and a launch of the entry script or command."""
    for c in f.ix.calls_to(*MODEL_TRAINERS):
        target = unique_target(f, f"ModelTrainer@{c.assigned_to or 'trainer'}")
        loc = f.src.node_loc(c.node)
        star = c.has_star_kwargs

        def add(kind: str, value: Any, node: ast.AST | None, key: str, **attrs: Any) -> None:
            f.out.append(Fact(kind, value, f.src.node_loc(node) if node is not None else loc, key, target, attrs))

        f.out.append(Fact("compute.target", {"source": "sagemaker", "provider": "aws", "resource": target,
                                             "role": "training"}, loc, c.qualname, target, {"sdk": "ModelTrainer"}))
        compute = _config_call(f, c, "compute", "Compute")
        mode = c.kwarg("training_mode")
        local = mode is not None and (dotted(mode) or "").endswith("LOCAL_CONTAINER")
        if local:
            add("compute.instance_type", "local", mode, "training_mode")
        elif compute is not None:
            it = f.val(compute, "instance_type")
            node = compute.kwarg("instance_type")
            if node is None and not compute.has_star_kwargs and compute.kwarg("instance_groups") is None:
                add("compute.instance_type", _ML_DEFAULT_INSTANCE, compute.node, "compute.instance_type", default=True)
            else:
                add("compute.instance_type", norm(it) if isinstance(it, str) else None, node or compute.node,
                    "compute.instance_type")
        elif c.kwarg("compute") is None and not star:
            add("compute.instance_type", _ML_DEFAULT_INSTANCE, None, "compute", default=True)
        else:
            add("compute.instance_type", None, c.kwarg("compute"), "compute")
        n: Any = UNKNOWN
        if compute is not None:
            n = f.val(compute, "instance_count") if compute.kwarg("instance_count") is not None else (
                1 if not compute.has_star_kwargs else UNKNOWN)
            add("compute.node_count", n if isinstance(n, int) and not isinstance(n, bool) else None,
                compute.kwarg("instance_count") or compute.node, "compute.instance_count")
        elif c.kwarg("compute") is None and not star:
            n = 1
            add("compute.node_count", 1, None, "compute", default=True)
        spot: Any = UNKNOWN
        if compute is not None:
            spot = f.val(compute, "enable_managed_spot_training") if compute.kwarg(
                "enable_managed_spot_training") is not None else (False if not compute.has_star_kwargs else UNKNOWN)
        elif c.kwarg("compute") is None and not star:
            spot = False
        cap_node = compute.kwarg("enable_managed_spot_training") if compute is not None else None
        add("compute.capacity", None if not isinstance(spot, bool) else ("spot" if spot else "on-demand"),
            cap_node or (compute.node if compute is not None else None), "compute.enable_managed_spot_training")
        ckpt = _config_call(f, c, "checkpoint_config", "CheckpointConfig")
        stop = _config_call(f, c, "stopping_condition", "StoppingCondition")
        has_ckpt = c.kwarg("checkpoint_config") is not None
        value = {
            "s3_uri": norm(f.val(ckpt, "s3_uri")) if ckpt is not None else None,
            # CheckpointConfig's documented default folder
            "local_path": (norm(f.val(ckpt, "local_path")) if ckpt.kwarg("local_path") is not None
                           else "/opt/ml/checkpoints") if ckpt is not None else None,
            "max_wait": norm(f.val(stop, "max_wait_time_in_seconds")) if stop is not None else None,
            "max_run": norm(f.val(stop, "max_runtime_in_seconds")) if stop is not None else None,
            # a CheckpointConfig without s3_uri gets a default bucket URI from the SDK
            "s3_uri_set": has_ckpt,
            "max_wait_set": stop is not None and stop.kwarg("max_wait_time_in_seconds") is not None,
            "star_kwargs": star or (c.kwarg("stopping_condition") is not None and stop is None),
        }
        add("compute.checkpoint", value, c.kwarg("checkpoint_config") or cap_node or c.node, "checkpoint_config")
        _model_trainer_launch(f, c, target, add, n)
        env = f.val(c, "environment")
        if isinstance(env, dict):
            for k, v in env.items():
                add("env", {"name": str(k), "value": str(v)}, c.kwarg("environment"), "environment")


def _model_trainer_launch(f: Facts, c: Call, target: str, add, nodes: Any) -> None:
    src = _config_call(f, c, "source_code", "SourceCode")
    dist = _config_call(f, c, "distributed", "Torchrun", "MPI")
    per_node = norm(f.val(dist, "process_count_per_node")) if dist is not None else None
    hp = f.val(c, "hyperparameters")
    args: list[str] = []
    if isinstance(hp, dict):
        for k, v in hp.items():
            args += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
    sd = f.val(src, "source_dir") if src is not None else UNKNOWN
    base = sd.rstrip("/") if isinstance(sd, str) and not sd.startswith(("s3://", "git")) else None
    command = f.val(src, "command") if src is not None else UNKNOWN
    if isinstance(command, str):
        from gpulint.read.kubernetes import launches_from_script

        for step in launches_from_script(command):
            if step.launch is None:
                continue
            launch = dict(step.launch)
            if base and isinstance(launch.get("script"), str) and not launch["script"].startswith("/"):
                launch["script"] = posixpath.normpath(posixpath.join(base, launch["script"]))
            if launch.get("nnodes") is None and isinstance(nodes, int):
                launch["nnodes"] = nodes
            add("launch", launch, src.kwarg("command"), "source_code.command", via="SourceCode.command", **step.attrs)
        return
    ep = f.val(src, "entry_script") if src is not None else UNKNOWN
    script = ep if isinstance(ep, str) else None
    if script and base is not None and not script.startswith("/"):
        script = posixpath.normpath(posixpath.join(base, script))
    elif script and isinstance(sd, str) and sd.startswith(("s3://", "git")):
        script = None  # code that is not in this repository
    value = {"tool": "sagemaker", "script": script, "module": None, "args": args,
             "nnodes": nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None,
             "nproc_per_node": per_node if isinstance(per_node, int) else None, "mixed_precision": None,
             "config_file": None, "deepspeed_config": None, "wrapper": None}
    if dist is not None:
        value["distributed"] = (dist.qualname or "").rsplit(".", 1)[-1].lower()
    node = (src.kwarg("entry_script") if src is not None else None) or c.kwarg("source_code") or c.node
    add("launch", value, node, "source_code.entry_script")
