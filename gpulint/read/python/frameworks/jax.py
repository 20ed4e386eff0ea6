"""What JAX / Flax / Optax / Orbax code says: whether it trains, in what precision, on what devices, across how
many, and whether it checkpoints. Called by the subject passes (training, devices, precision, distributed,
checkpoints); this module reads the calls, the passes decide the order the facts come out in.

- training: a gradient (``jax.grad`` / ``jax.value_and_grad``, ``nnx.value_and_grad``, equinox's, a flax
  ``DynamicScale.value_and_grad``) applied by an optimizer (``optax.apply_updates``, ``state.apply_gradients``,
  an ``nnx.Optimizer``'s ``update``). The step is usually handed to ``jax.jit`` / ``jax.pmap`` rather than
  called (``p_train_step = jax.pmap(train_step)``): the fact is then placed at that wrapping call, so that its
  owner (the function running the loop) is what a script must call to train.
- precision: JAX computes in the dtype of its arrays, so mixed precision is a 16-bit ``dtype=`` on the Flax
  modules (``param_dtype`` float32 kept for the weights), a module field defaulting to one, a jmp policy with a
  16-bit compute dtype, or a cast of the parameters/inputs (``.astype(jnp.bfloat16)``). A ``dtype=`` decided at
  run time (a config value, ``jnp.bfloat16 if half else jnp.float32``) is unknown; ``dtype=self.dtype`` inside a
  module passes the module's own field down and decides nothing. A trainer that sets none computes in fp32
  (the ``default`` fact, placed at the training step).
- ``jax_default_matmul_precision``: fp32 matmuls on TF32 (XLA:GPU's default) or in full fp32 (``highest``).
"""
from __future__ import annotations

import ast
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.python.common import Facts, classes_around, norm, owner, qualified
from gpulint.read.python.index import UNKNOWN, Call, dotted

JAX_MODULES = ("jax", "flax", "optax", "equinox", "jmp", "orbax", "haiku")
GRADS = {"jax.grad", "jax.value_and_grad", "flax.nnx.grad", "flax.nnx.value_and_grad", "flax.linen.grad",
         "flax.linen.value_and_grad", "equinox.filter_grad", "equinox.filter_value_and_grad"}
#: the transformations a step is compiled or spread over devices with
TRANSFORMS = {"jax.jit", "jax.pmap", "jax.experimental.pjit.pjit", "jax.experimental.pjit", "jax.experimental.shard_map.shard_map",
              "jax.shard_map", "flax.nnx.jit", "flax.nnx.pmap", "flax.nnx.shard_map", "equinox.filter_jit", "equinox.filter_pmap"}
PMAP = {"jax.pmap", "flax.nnx.pmap", "equinox.filter_pmap"}
DYNAMIC_SCALE = {"flax.training.dynamic_scale.DynamicScale", "flax.optim.DynamicScale"}
JMP_POLICIES = {"jmp.get_policy", "jmp.Policy"}

_HALF = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "bf16": "bf16", "fp16": "fp16"}
_FULL = {"float32": "fp32", "fp32": "fp32", "float": "fp32", "f32": "fp32", "float64": "fp32"}
_SHORT = {"bf16": "bf16", "f16": "fp16", "f32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "half": "fp16",
          "full": "fp32", "float": "fp32"}
#: callees whose ``dtype=`` is the dtype of one array (``jnp.ones(shape, dtype)``), not of a model's computation
_ARRAY_HEADS = ("jax.numpy.", "jax.random.", "jax.lax.", "jax.ShapeDtypeStruct", "jax.nn.initializers.", "numpy.", "tensorflow.",
                "torch.", "jax.dtypes.", "ml_dtypes.", "jax.experimental", "jax.device_put", "flax.linen.initializers.",
                "flax.nnx.initializers.", "tensorflow_datasets.", "grain.")
_ARRAY_ATTRS = frozenset({"zeros", "ones", "empty", "full", "array", "asarray", "arange", "linspace", "eye", "zeros_like",
                          "ones_like", "full_like", "normal", "uniform", "truncated_normal", "randint", "bernoulli", "cast",
                          "convert_element_type", "ShapeDtypeStruct", "finfo", "iinfo", "astype", "dtype", "as_numpy_iterator",
                          "map", "from_tensor_slices", "batch", "numpy", "tolist", "load", "frombuffer", "fromfile",
                          "initializer", "lecun_normal", "variance_scaling", "he_normal", "glorot_uniform", "xavier_uniform"})


def imports_jax(f: Facts) -> bool:
    return f.ix.imports_any(*JAX_MODULES)


# -- training ---------------------------------------------------------------------------------------
def training(f: Facts) -> None:
    """A JAX training step: a gradient and an optimizer applying it, in the same file."""
    ix = f.ix
    if not imports_jax(f):
        return
    grads = [c for c in ix.calls if c.qualname in GRADS or (c.attr == "value_and_grad" and c.receiver)]
    if not grads:
        return
    update = next((c for c in ix.calls if _applies_updates(f, c)), None)
    if update is None:
        return
    at = _wrapping_call(f, update) or update
    f.add("trains", {"via": "jax"}, at.node, at.qualname or at.attr, **owner(ix, at))


def _applies_updates(f: Facts, c: Call) -> bool:
    q = c.qualname or ""
    if q in ("optax.apply_updates", "equinox.apply_updates"):
        return True
    if c.attr == "apply_gradients" and c.receiver and (c.kwarg("grads") is not None or "state" in c.receiver.lower()):
        return True  # a flax TrainState (``state.apply_gradients(grads=grads)``)
    # an nnx.Optimizer: ``optimizer.update(model, grads)`` / ``optimizer.update(grads)``
    return c.attr == "update" and (q.startswith("flax.nnx.") or (
        f.ix.imports_any("flax.nnx") and c.receiver.rsplit(".", 1)[-1].lower() in ("optimizer", "opt", "optim")))


def _wrapping_call(f: Facts, c: Call) -> Call | None:
    """The ``jax.jit(train_step)`` / ``jax.pmap(functools.partial(train_step, ...))`` that hands the step holding `c`
    to a transformation, where nothing calls the step by name: the loop calls what that returned."""
    step = c.scope
    if not step:
        return None
    callers, _ = f.ix.reached_from({step})
    if callers - {step}:
        return None  # called by name (a ``@jax.jit`` decorated step): its callers are found as they are
    for x in f.ix.calls:
        if x.qualname in TRANSFORMS or x.qualname == "functools.partial":
            if any(n.__class__ is ast.Name and n.id == step for a in x.node.args for n in ast.walk(a)):
                return x
    return None


def trains(f: Facts) -> bool:
    return any(x.kind == "trains" and x.value.get("via") == "jax" for x in f.out)


# -- devices ----------------------------------------------------------------------------------------
def devices(f: Facts) -> None:
    """JAX takes the GPU when its CUDA plugin is installed and one is present, and runs on the CPU otherwise: a JAX
    training step is framework GPU use; ``jax.devices("gpu")`` asks for one outright."""
    ix = f.ix
    if not imports_jax(f):
        return
    for c in ix.calls_to("jax.devices", "jax.local_devices"):
        if f.val(c, "backend", 0) in ("gpu", "cuda"):
            f.add("uses_gpu", {"via": "jax.devices"}, c.node, c.qualname)
            return
    if trains(f):
        t = next(x for x in f.out if x.kind == "trains" and x.value.get("via") == "jax")
        f.out.append(Fact("uses_gpu", {"via": "jax", "auto": True}, t.loc, "jax", "", {}))


# -- precision --------------------------------------------------------------------------------------
def dtype_of(f: Facts, node: ast.expr | None, scope: str) -> Any:
    """A dtype as gpulint names it (bf16, fp16, fp32), UNKNOWN when it is decided at run time."""
    if node is None:
        return UNKNOWN
    text = dotted(node)
    if text:
        last = text.rsplit(".", 1)[-1].lower()
        head = qualified(f, node)
        if "." in text and (last in _HALF or last in _FULL) and head.startswith(("jax.", "numpy.", "jnp.", "ml_dtypes.", "flax.")):
            return _HALF.get(last) or _FULL.get(last)
    if node.__class__ is ast.Call and qualified(f, node.func) in ("jax.numpy.dtype", "numpy.dtype") and node.args:
        return dtype_of(f, node.args[0], scope)
    v = f.ev.value(node, scope)
    if isinstance(v, str):
        return _HALF.get(v.lower()) or _FULL.get(v.lower()) or UNKNOWN
    return UNKNOWN


def precision(f: Facts) -> None:
    """The dtypes the JAX code computes in (see the module's docstring), then fp32 for a trainer that sets none."""
    if not imports_jax(f):
        return
    before = len(f.out)
    _module_dtypes(f)
    _field_defaults(f)
    _jmp(f)
    _casts(f)
    for c in f.ix.calls_to(*DYNAMIC_SCALE):
        f.add("grad_scaler", {"enabled": True}, c.node, c.qualname)  # flax's loss scaling for fp16
    mine = [x for x in f.out[before:] if x.kind == "precision"]
    others = [x for x in f.out[:before] if x.kind == "precision"]
    if trains(f) and not mine and not others:
        t = next(x for x in f.out if x.kind == "trains" and x.value.get("via") == "jax")
        f.out.append(Fact("precision", {"mechanism": "jax", "dtype": "fp32", "enabled": False, "default": True},
                                 t.loc, "dtype", "", {}))


def _module_dtypes(f: Facts) -> None:
    """``nn.Dense(..., dtype=jnp.bfloat16)``, ``Model(dtype=config.dtype)``, ``from_pretrained(..., dtype=...)``: the
    dtype a model computes in; the array functions' ``dtype=`` (``jnp.ones(shape, dtype)``) is not one. A dtype decided
    at run time is recorded once per file (one is enough to leave the workload's precision undecided)."""
    unknown = False
    for c in f.ix.calls:
        q = c.qualname or ""
        if q.startswith(_ARRAY_HEADS) or c.attr in _ARRAY_ATTRS:
            continue
        if "model" in c.assigned_to.lower() and f.opaque_kwargs(c) and not unknown:
            # ``model = model_cls(**config.model)``: a dtype may be among the settings
            unknown = True
            f.add("precision", {"mechanism": "jax", "dtype": None, "enabled": None}, c.node, "**kwargs")
        for kw in ("dtype", "param_dtype", "compute_dtype"):
            node = c.kwarg(kw)
            if node is None or _passed_down(f, node, c):
                continue
            d = dtype_of(f, node, c.scope)
            if d in ("bf16", "fp16"):
                f.add("precision", {"mechanism": "jax", "dtype": d, "enabled": True}, c.node, kw)
                break
            elif d is UNKNOWN and kw != "param_dtype" and not unknown:
                unknown = True
                f.add("precision", {"mechanism": "jax", "dtype": None, "enabled": None}, c.node, kw)


def _passed_down(f: Facts, node: ast.expr, c: Call) -> bool:
    """No decision at this call: ``dtype=None``; a module handing its own field to its layers (``dtype=self.dtype``,
    ``cfg = self.config`` ... ``dtype=cfg.dtype``); a module's constructor or factory handing on its own argument
    (``def __init__(self, ..., dtype): ... nnx.Linear(..., dtype=dtype)``): its caller decides."""
    if node.__class__ is ast.Constant and node.value is None:
        return True
    root = node
    while root.__class__ is ast.Attribute:
        root = root.value
    if root.__class__ is not ast.Name:
        return False
    if root.id in ("self", "cls"):
        return True
    bound = f.ix.bindings(root.id, c.scope, c.node)
    if bound and all(_rooted_at_self(a.value) for a in bound):
        return True
    return bound is None and bool(classes_around(f.ix, c))  # a parameter of a method


def _rooted_at_self(v: Any) -> bool:
    while isinstance(v, ast.Attribute):
        v = v.value
    return isinstance(v, ast.Name) and v.id in ("self", "cls")


def _field_defaults(f: Facts) -> None:
    """A Flax module field defaulting to a 16-bit dtype (``dtype: Any = jnp.bfloat16``): the model computes in it
    unless its builder passes another."""
    for name, (node, bases) in f.ix.classes.items():
        if not any(b.startswith(("flax.", "equinox.")) or b.endswith("Module") for b in bases):
            continue
        for s in node.body:
            if s.__class__ is ast.AnnAssign and s.target.__class__ is ast.Name and s.target.id in ("dtype", "compute_dtype") \
                    and s.value is not None:
                d = dtype_of(f, s.value, "")
                if d in ("bf16", "fp16"):
                    f.out.append(_fact(f, "precision", {"mechanism": "jax", "dtype": d, "enabled": True}, s, f"{name}.dtype"))


def _fact(f: Facts, kind: str, value: Any, node: ast.AST, key: str) -> Fact:
    return Fact(kind, value, f.src.node_loc(node), key, "", {})


def _jmp(f: Facts) -> None:
    """A jmp policy: ``jmp.get_policy("params=float32,compute=bfloat16,output=float32")`` or ``jmp.Policy(compute_dtype=...)``."""
    for c in f.ix.calls_to(*JMP_POLICIES):
        if c.qualname == "jmp.Policy":
            d = dtype_of(f, c.kwarg("compute_dtype") or c.positional(1), c.scope)
        else:
            spec = f.val(c, None, 0)
            d = _jmp_compute(spec) if isinstance(spec, str) else UNKNOWN
        if d is UNKNOWN:
            f.add("precision", {"mechanism": "jmp", "dtype": None, "enabled": None}, c.node, c.qualname)
        else:
            f.add("precision", {"mechanism": "jmp", "dtype": d, "enabled": d != "fp32"}, c.node, c.qualname)


def _jmp_compute(spec: str) -> Any:
    """The compute dtype of a jmp policy string (``c=bf16``, ``compute=bfloat16``; one word is every dtype)."""
    parts = [p.strip().lower() for p in spec.split(",") if p.strip()]
    if len(parts) == 1 and "=" not in parts[0]:
        return _SHORT.get(parts[0], UNKNOWN)
    for p in parts:
        key, _, val = p.partition("=")
        if key.strip() in ("c", "compute", "compute_dtype"):
            return _SHORT.get(val.strip(), UNKNOWN)
    return UNKNOWN


def _casts(f: Facts) -> None:
    """``params.astype(jnp.bfloat16)``, ``jax.tree.map(lambda x: x.astype(jnp.float16), params)``: 16-bit arrays (once)."""
    for c in f.ix.method_calls("astype"):
        d = dtype_of(f, c.positional(0) or c.kwarg("dtype"), c.scope)
        if d in ("bf16", "fp16"):
            f.add("precision", {"mechanism": "jax", "dtype": d, "enabled": True}, c.node, "astype")
            return


def matmul_precision(f: Facts) -> None:
    """``jax.config.update("jax_default_matmul_precision", ...)`` / ``jax.default_matmul_precision(...)``: fp32
    matmuls on TF32 (``tensorfloat32``, ``high``, and on GPU ``bfloat16`` / ``default`` as well) or in full fp32."""
    if not imports_jax(f):
        return
    for c in f.ix.calls:
        if c.qualname in ("jax.config.update", "jax.config.config.update") and f.val(c, None, 0) == "jax_default_matmul_precision":
            v = f.val(c, None, 1)
        elif c.qualname == "jax.default_matmul_precision":
            v = f.val(c, None, 0)
        else:
            continue
        on = None if not isinstance(v, str) else v.lower() not in ("float32", "highest")
        f.add("tf32", {"enabled": on, "via": "jax_default_matmul_precision", "what": "matmul"}, c.node, c.qualname)


# -- several devices, several hosts -----------------------------------------------------------------
def distributed(f: Facts) -> None:
    """``jax.pmap``: one replica of the step per local device (data parallel); ``jax.distributed.initialize``: one
    process per host of a multi-host job. pjit / shard_map partition as their mesh says (data, model or both):
    not read."""
    ix = f.ix
    for c in ix.calls_to(*PMAP):
        f.add("ddp", {"via": "jax.pmap"}, c.node, c.qualname)
        break
    for c in ix.calls_to("jax.distributed.initialize"):
        f.add("ddp", {"via": "jax.distributed"}, c.node, c.qualname)
        break


# -- checkpoints ------------------------------------------------------------------------------------
_FLAX_SAVES = ("flax.training.checkpoints.save_checkpoint", "flax.training.checkpoints.save_checkpoint_multiprocess")
_FLAX_RESTORES = ("flax.training.checkpoints.restore_checkpoint",)
_ORBAX = "orbax.checkpoint"


def owns_checkpoint_call(c: Call) -> bool:
    """Is `c` a flax/orbax checkpoint call this module reads (so the generic ``save_checkpoint`` branch skips it)?"""
    return (c.qualname or "").startswith(("flax.", _ORBAX))


def checkpoints(f: Facts) -> None:
    """flax.training.checkpoints' save/restore; orbax: a Checkpointer's or CheckpointManager's ``save`` /
    ``restore``, and the ``ocp.args.StandardSave`` / ``...Restore`` arguments that say what a call does."""
    ix = f.ix
    if not imports_jax(f):
        return
    seen: set[tuple[str, int]] = set()  # ``mngr.save(step, args=ocp.args.StandardSave(state))`` is one save

    def add(kind: str, value: dict, c: Call, key: str) -> None:
        if (kind, c.node.lineno) not in seen:
            seen.add((kind, c.node.lineno))
            f.add(kind, value, c.node, key)

    for c in ix.calls:
        q = c.qualname or ""
        if q in _FLAX_SAVES:
            add("checkpoint.save", {"via": "flax", "dir": _dir(f, c, "ckpt_dir")}, c, q)
        elif q in _FLAX_RESTORES:
            add("checkpoint.resume", {"via": "flax"}, c, q)
        elif q.startswith(_ORBAX) and c.attr == "save" and "()" in q:
            where = _manager_dir(f, c) if "Manager" in q else _dir(f, c, "directory")
            add("checkpoint.save", {"via": "orbax", "dir": where}, c, q)
        elif q.startswith(_ORBAX) and c.attr == "restore" and "()" in q:
            add("checkpoint.resume", {"via": "orbax"}, c, q)
        elif q.startswith(_ORBAX + ".args.") and q.endswith("Save"):
            add("checkpoint.save", {"via": "orbax", "dir": None}, c, q)
        elif q.startswith(_ORBAX + ".args.") and q.endswith("Restore"):
            add("checkpoint.resume", {"via": "orbax"}, c, q)
        elif not q.startswith(_ORBAX) and ix.imports_any(_ORBAX) and c.attr in ("save", "restore") and _orbax_receiver(c):
            # a manager kept on an object (``self.mngr.save(step, args=...)``): its type is not followed, its name is
            kind = "checkpoint.save" if c.attr == "save" else "checkpoint.resume"
            add(kind, {"via": "orbax", **({"dir": None} if c.attr == "save" else {})}, c, c.attr)


def _manager_dir(f: Facts, save: Call) -> Any:
    """The directory of the CheckpointManager a ``mngr.save`` is called on (``mngr = ocp.CheckpointManager("gs://...")``)."""
    for c in f.ix.calls_to(_ORBAX + ".CheckpointManager"):
        if c.assigned_to and c.assigned_to == save.receiver:
            return _dir(f, c, "directory")
    return None


def _orbax_receiver(c: Call) -> bool:
    last = c.receiver.rsplit(".", 1)[-1].lower()
    return any(w in last for w in ("mngr", "manager", "checkpointer", "ckpt", "checkpoint"))


def _dir(f: Facts, c: Call, kw: str) -> Any:
    v = norm(f.val(c, kw, 0))
    if isinstance(v, str):
        return v.rstrip("/") or "/"
    return None if not isinstance(v, dict) else v

