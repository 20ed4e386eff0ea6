"""Whether the training can be resumed: the ``checkpoint.save`` and ``checkpoint.resume`` facts.

torch.save, distributed checkpoints, accelerate/DeepSpeed ``save_state`` / ``save_checkpoint``, HF
``save_pretrained`` / ``save_model`` and ``resume_from_checkpoint``, Lightning's ModelCheckpoint and its
default checkpointing; Keras and TensorFlow checkpoints are read by frameworks/keras.py, after them. (The HF
Trainer's ``save_strategy`` is read with TrainingArguments in frameworks/hf.py.) A resume is only one when the state dict comes from a file, which ``_from_file`` follows.
"""
from __future__ import annotations

import ast
import posixpath

from gpulint.read.python.common import Facts, norm
from gpulint.read.python.frameworks import jax, keras, ray
from gpulint.read.python.index import dotted
from gpulint.read.python.names import LIGHTNING_TRAINERS


def checkpoints(f: Facts) -> None:
    ix = f.ix
    for c in ix.calls_to("torch.save"):
        target = f.val(c, "f", 1)
        where = posixpath.dirname(target) or "." if isinstance(target, str) else None
        f.add("checkpoint.save", {"via": "torch.save", "dir": where}, c.node, "torch.save")
    for c in ix.calls_to("torch.distributed.checkpoint.save", "torch.distributed.checkpoint.save_state_dict"):
        f.add("checkpoint.save", {"via": "dcp", "dir": None}, c.node, c.qualname)
    for c in ix.calls_to("torch.distributed.checkpoint.load", "torch.distributed.checkpoint.load_state_dict"):
        f.add("checkpoint.resume", {"via": "dcp"}, c.node, c.qualname)
    for c in ix.calls:
        if jax.owns_checkpoint_call(c):
            continue  # flax / orbax, read by frameworks/jax.py
        if c.attr == "save_state" and c.receiver:
            f.add("checkpoint.save", {"via": "save_state", "dir": norm(f.val(c, "output_dir", 0))}, c.node, "save_state")
        elif c.attr == "save_checkpoint" and c.receiver:
            f.add("checkpoint.save", {"via": "save_checkpoint", "dir": norm(f.val(c, "save_dir", 0))}, c.node, "save_checkpoint")
        elif c.attr == "save_and_keep_only" and c.receiver:
            # SpeechBrain's Checkpointer (speechbrain.utils.checkpoints): saves its recoverables under checkpoints_dir
            f.add("checkpoint.save", {"via": "speechbrain", "dir": None}, c.node, "save_and_keep_only")
        elif c.attr == "recover_if_possible" and c.receiver:
            f.add("checkpoint.resume", {"via": "speechbrain"}, c.node, "recover_if_possible")
        elif c.attr == "load_state" and c.receiver:
            f.add("checkpoint.resume", {"via": "load_state"}, c.node, "load_state")
        elif c.attr == "load_checkpoint" and c.receiver:
            f.add("checkpoint.resume", {"via": "load_checkpoint"}, c.node, "load_checkpoint")
        elif c.attr == "load_state_dict" and c.receiver:
            if _from_file(f, c.positional(0) or c.kwarg("state_dict"), c.scope):
                f.add("checkpoint.resume", {"via": "load_state_dict"}, c.node, "load_state_dict")
        elif c.attr == "save_pretrained" and c.receiver:
            f.add("checkpoint.save", {"via": "save_pretrained", "dir": norm(f.val(c, "save_directory", 0)), "weights_only": True}, c.node, "save_pretrained")
        elif c.attr == "save_model" and c.receiver:
            f.add("checkpoint.save", {"via": "save_model", "dir": norm(f.val(c, "output_dir", 0)), "weights_only": True}, c.node, "save_model")
        elif c.attr == "train" and c.qualname and c.qualname.endswith("().train") and f.present(c, "resume_from_checkpoint"):
            v = f.val(c, "resume_from_checkpoint")
            if v not in (None, False):
                f.add("checkpoint.resume", {"via": "resume_from_checkpoint", "value": norm(v)}, c.node, "resume_from_checkpoint")
        elif c.attr == "fit" and f.present(c, "ckpt_path"):
            v = f.val(c, "ckpt_path")
            if v is not None:
                f.add("checkpoint.resume", {"via": "ckpt_path", "value": norm(v)}, c.node, "ckpt_path")
    for c in ix.calls:
        q = c.qualname or ""
        if q.endswith("ModelCheckpoint") and q.startswith(("lightning", "pytorch_lightning")):
            f.add("checkpoint.save", {"via": "lightning", "dir": norm(f.val(c, "dirpath"))}, c.node, q)
        elif q in LIGHTNING_TRAINERS and q.endswith("Trainer"):
            ec = f.val(c, "enable_checkpointing") if f.present(c, "enable_checkpointing") else True
            if ec is True:
                f.add("checkpoint.save", {"via": "lightning", "dir": norm(f.val(c, "default_root_dir")), "default": True}, c.node, q)
    keras.checkpoints(f)
    jax.checkpoints(f)  # flax.training.checkpoints, orbax (frameworks/jax.py)
    ray.checkpoints(f)  # Ray Train's report(checkpoint=...), CheckpointConfig, get_checkpoint (frameworks/ray.py)

_LOADERS = {"torch.load", "safetensors.torch.load_file", "torch.distributed.checkpoint.load"}


def _from_file(f: Facts, arg: ast.expr | None, scope: str, depth: int = 0) -> bool:
    """Is a state dict read from a file (torch.load(...), ckpt["model"] of a
    loaded dict)? Copying between live modules (ema.load_state_dict(model.state_dict()))
    is not a resume."""
    if arg is None or depth > 4:
        return False
    if isinstance(arg, ast.Subscript):
        return _from_file(f, arg.value, scope, depth + 1)
    if isinstance(arg, ast.Call):
        q = f.ix.imports.get((dotted(arg.func) or "").split(".")[0], "")
        full = (q + "." + (dotted(arg.func) or "").split(".", 1)[1]) if q and "." in (dotted(arg.func) or "") else f.ix.imports.get(dotted(arg.func) or "", "")
        return full in _LOADERS or (dotted(arg.func) or "").endswith(("load_file", "torch.load"))
    if isinstance(arg, ast.Name):
        for a in f.ix.assigns:
            if a.target == arg.id and (a.scope == scope or a.scope == ""):
                if _from_file(f, a.value if isinstance(a.value, ast.expr) else None, scope, depth + 1):
                    return True
    return False
