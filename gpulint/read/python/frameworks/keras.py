"""What TensorFlow / Keras code says: how it trains, in what precision, where it checkpoints, on how many GPUs
and where it runs.

Called by the subject passes, each in its place: training.py (``trains`` of a Keras ``fit`` / ``fit_generator`` /
``train_on_batch`` in the trainer-call chain, a GradientTape loop, a benchmark's step), devices.py (``uses_gpu``,
``cpu_only``), precision.py (``precision``, ``grad_scaler``), loaders.py (``dataloader``), distributed.py (``ddp``)
and checkpoints.py (``checkpoint.save`` / ``checkpoint.resume``). A method named ``fit`` is Keras training only in a file that imports TensorFlow or
Keras and on an object that is not another library's (scikit-learn's ``fit`` trains no GPU model).

The input pipeline is read where the IO rules' measure fits it: a tf.data ``map`` whose function decodes images or
audio (``tf.io.decode_jpeg``) runs one element at a time unless ``num_parallel_calls`` is given, as a DataLoader
without workers does (loaders.py). ``AUTOTUNE`` or a count is parallel; a map that decodes nothing is not judged;
a PyDataset's ``workers=`` is not read.
"""
from __future__ import annotations

import ast
import posixpath
import re
from typing import Any, Callable

from gpulint.read.python.common import Facts, norm, owner, printed_and_asserted, read_again
from gpulint.read.python.index import UNKNOWN, Call, PyIndex, dotted
from gpulint.read.python.names import MEDIA_DECODERS

#: modules whose import makes a file a TensorFlow / Keras one
MODULES = ("tensorflow", "keras", "tf_keras")

#: qualified-name heads of Keras models and of the libraries that build or wrap them
_KERAS_OBJECTS = ("transformers.TF", "tensorflow.", "keras.", "tf_keras.", "horovod.tensorflow.", "horovod.keras.",
                  "keras_hub.", "keras_nlp.", "keras_cv.", "tensorflow_hub.")

#: the methods of a Keras model that run its training loop
TRAIN_METHODS = frozenset({"fit", "fit_generator", "train_on_batch"})


def keras_file(ix: PyIndex) -> bool:
    return ix.imports_any(*MODULES)


def _keras_object(ix: PyIndex, c: Call) -> bool:
    """Is the receiver of `c` a Keras object as far as the file says: built by TensorFlow/Keras (or a library of
    Keras models), by a function or class of the file, or not resolved at all (``self.model``, a parameter)?
    A receiver the file builds with another library (``LogisticRegression().fit``) is not."""
    q = c.qualname or ""
    if not q or q.startswith(_KERAS_OBJECTS):
        return True
    head = q.partition("(")[0]
    return "." not in head and (head in ix.top_functions or head in ix.classes)


def fits(f: Facts, c: Call) -> bool:
    """Is `c` a Keras model's training loop (``model.fit(...)``, ``fit_generator``, ``train_on_batch``)? One
    branch of training._trainer_calls' chain over the calls."""
    return c.attr in TRAIN_METHODS and bool(c.receiver) and keras_file(f.ix) and _keras_object(f.ix, c)


def custom_loop(f: Facts) -> None:
    """A custom TensorFlow loop: gradients of a GradientTape applied by an optimizer."""
    ix = f.ix
    tape = [c for c in ix.method_calls("gradient") if ix.imports_any("tensorflow")]
    applied = list(ix.method_calls("apply_gradients"))
    if tape and applied:
        f.add("trains", {"via": "tensorflow"}, applied[0].node, "apply_gradients", **owner(ix, applied[0]))


# -- devices ----------------------------------------------------------------------------------------------------

#: calls that only ask which GPUs there are (the code runs on the CPU as well)
_GPU_PROBES = {"tensorflow.config.list_physical_devices", "tensorflow.config.experimental.list_physical_devices",
               "tensorflow.test.is_gpu_available", "tensorflow.config.experimental.set_memory_growth",
               "tensorflow.config.set_memory_growth"}
#: calls that pin the process to a GPU (one per process under Horovod or MultiWorkerMirroredStrategy)
_GPU_PINS = {"tensorflow.config.set_visible_devices", "tensorflow.config.experimental.set_visible_devices"}


def gpu_use(f: Facts) -> None:
    """Where TensorFlow code runs: pinned to a GPU (``set_visible_devices(gpus[rank], "GPU")``, ``tf.device("/gpu:0")``),
    only asking for GPUs or picking among those there are (a probe: ``list_physical_devices("GPU")``, a pin inside
    ``if gpus:``, ``config.gpu_options.visible_device_list``), or hiding them (``set_visible_devices([], "GPU")``)."""
    ix = f.ix
    if not keras_file(ix):
        return
    for c in ix.calls:
        q = c.qualname or ""
        if q in _GPU_PINS and "GPU" in str(f.val(c, "device_type", 1)).upper():
            devices = c.kwarg("devices") or c.positional(0)
            if devices.__class__ in (ast.List, ast.Tuple) and not devices.elts:
                # ``set_visible_devices([], "GPU")``: the process hides every GPU from TensorFlow and runs on the CPU
                f.add("cpu_only", {"via": f"{q}([], 'GPU')"}, c.node, q)
            else:
                f.add("uses_gpu", {"via": q, "probe": "gpu" in c.guards or _in_gpu_check(f, c)}, c.node, q)
            return
        if q == "tensorflow.device" and "GPU" in str(f.val(c, "device_name", 0)).upper():
            f.add("uses_gpu", {"via": "tensorflow.device", "probe": "gpu" in c.guards}, c.node, q)
            return
    for a in ix.assigns:
        if a.target.endswith("gpu_options.visible_device_list"):
            # a TF 1.x session option: it picks among the GPUs there are, and a machine without one runs on the CPU
            f.add("uses_gpu", {"via": "gpu_options.visible_device_list", "probe": True}, a.node, "visible_device_list")
            return
    queries = [c for c in ix.calls if c.qualname in _GPU_PROBES]
    said, asserted = printed_and_asserted(f.src.syntax) if queries else (set(), set())
    # ``print("GPU is", "available" if tf.config.list_physical_devices("GPU") else "NOT AVAILABLE")``: a notebook
    # reporting what it has; ``assert tf.config.list_physical_devices("GPU")``: the script refuses to run without one
    probe = next((c for c in queries if id(c.node) not in said), None)
    if probe is not None and id(probe.node) in asserted:
        f.add("uses_gpu", {"via": f"{probe.qualname} (asserted)"}, probe.node, probe.qualname)
    elif probe is not None:
        f.add("uses_gpu", {"via": probe.qualname, "probe": True}, probe.node, probe.qualname)
    # Keras takes a GPU when TensorFlow sees one, but code that says nothing of a device is no evidence of one (a
    # course notebook's fit runs on a laptop as well): as for PyTorch code without .cuda(), the compute or the
    # launcher has to say GPU


def _in_gpu_check(f: Facts, c: Call) -> bool:
    """Does `c` run only where TensorFlow found GPUs: ``if gpus:`` of ``gpus = tf.config.list_physical_devices("GPU")``
    (or the listing itself in the test)? Without GPUs the script skips it and runs on the CPU."""
    for test, side in c.conditions:
        for node in ast.walk(test):
            if node.__class__ is ast.Name:
                lists = any(_lists_gpus(f, b.value) for b in f.ix.bindings(node.id, c.scope) or [])
            else:
                lists = _lists_gpus(f, node)
            if lists:
                return side
    return False


def _lists_gpus(f: Facts, node: ast.AST) -> bool:
    call = f.ix.call_at(node) if node.__class__ is ast.Call else None
    return call is not None and call.qualname in _GPU_PROBES


def training_call(f: Facts) -> Call | None:
    """The call of the file's first Keras or TensorFlow ``trains`` fact (training.py emitted them before): its
    first ``fit``, else the ``apply_gradients`` of its custom loop."""
    if not any(x.kind == "trains" and x.value.get("via") in ("keras", "tensorflow") for x in f.out):
        return None
    return next((c for c in f.ix.calls if fits(f, c)), None) or next(f.ix.method_calls("apply_gradients"), None)


# -- precision ----------------------------------------------------------------------------------------------------

_MP = ("tensorflow.keras.mixed_precision", "keras.mixed_precision", "tf_keras.mixed_precision")
#: set the global dtype policy: its argument is a policy name or a Policy object
POLICY_SETTERS = {f"{m}.{name}" for m in _MP for name in ("set_global_policy", "experimental.set_policy")} | \
                 {"keras.config.set_dtype_policy"}
POLICIES = {f"{m}.{name}" for m in _MP for name in ("Policy", "experimental.Policy")} | {"keras.DTypePolicy"}
LOSS_SCALERS = {f"{m}.{name}" for m in _MP for name in ("LossScaleOptimizer", "experimental.LossScaleOptimizer")}
#: TF 1.x / early 2.x switches of the automatic mixed-precision graph rewrite (fp16 with loss scaling)
GRAPH_REWRITE = {"tensorflow.train.experimental.enable_mixed_precision_graph_rewrite",
                 "tensorflow.compat.v1.train.experimental.enable_mixed_precision_graph_rewrite",
                 "tensorflow.keras.mixed_precision.experimental.enable_mixed_precision_graph_rewrite"}


def precision(f: Facts) -> None:
    """A Keras dtype policy (``set_global_policy("mixed_bfloat16")``, or a ``Policy`` object given to it), the
    fp16 graph rewrite, and loss scaling (``LossScaleOptimizer``, a ``grad_scaler``)."""
    ix = f.ix
    for c in ix.calls_to(*POLICY_SETTERS):
        dtype = _policy_dtype(_policy_name(f, c))
        enabled = None if dtype is None else dtype != "fp32"
        f.add("precision", {"mechanism": "keras", "dtype": dtype, "enabled": enabled}, c.node, c.qualname)
    for c in ix.calls_to(*GRAPH_REWRITE):
        f.add("precision", {"mechanism": "keras", "dtype": "fp16", "enabled": True}, c.node, c.qualname)
    for c in ix.calls_to(*LOSS_SCALERS):
        f.add("grad_scaler", {"enabled": True}, c.node, c.qualname)


def _policy_dtype(name: Any) -> str | None:
    """The compute dtype of a policy name: ``mixed_bfloat16`` / ``bfloat16`` bf16, ``mixed_float16`` / ``float16`` fp16,
    ``float32`` / ``float64`` fp32; None for a name not read (a variable, a name Keras would refuse)."""
    text = str(name).lower() if isinstance(name, str) else ""
    if "bfloat16" in text:
        return "bf16"
    if "float16" in text:
        return "fp16"
    return "fp32" if text in ("float32", "float64") else None


def _policy_name(f: Facts, c: Call) -> Any:
    """The policy name a setter is given: a string, or the name a ``Policy("mixed_float16")`` built in place or
    bound to a name of the file is made with; UNKNOWN otherwise."""
    arg = c.kwarg("policy") or c.positional(0)
    if arg is None:
        return UNKNOWN
    if arg.__class__ is ast.Name:
        bound = f.ix.bindings(arg.id, c.scope, c.node) or []
        values = [b.value for b in bound if isinstance(b.value, ast.Call)]
        arg = values[-1] if len(values) == len(bound) == 1 else arg
    if arg.__class__ is ast.Call:
        built = f.ix.call_at(arg)
        if built is None or built.qualname not in POLICIES:
            return UNKNOWN
        return f.val(built, "name", 0)
    return f.ev.value(arg, c.scope)


# -- checkpoints ----------------------------------------------------------------------------------------------------

_CALLBACKS = ("tensorflow.keras.callbacks.", "keras.callbacks.")
MODEL_CHECKPOINT = {p + "ModelCheckpoint" for p in _CALLBACKS}
BACKUP_AND_RESTORE = {p + name for p in _CALLBACKS for name in ("BackupAndRestore", "experimental.BackupAndRestore")}
#: TensorFlow's checkpoint objects: ``save`` / ``write`` them, ``restore`` / ``read`` them back
TF_CHECKPOINTS = ("tensorflow.train.Checkpoint", "tensorflow.train.CheckpointManager", "tensorflow.train.Saver")
#: a whole model (weights, optimizer state) read back from a file
LOAD_MODEL = {"tensorflow.keras.models.load_model", "keras.models.load_model", "keras.saving.load_model",
              "tensorflow.keras.saving.load_model", "horovod.tensorflow.keras.load_model", "horovod.keras.load_model"}
SAVED_MODEL = {"tensorflow.saved_model.save", "tensorflow.keras.models.save_model", "keras.models.save_model",
               "keras.saving.save_model"}


def checkpoints(f: Facts) -> None:
    """Keras callbacks that checkpoint (``ModelCheckpoint``; ``BackupAndRestore``, which also resumes), TensorFlow
    checkpoint objects (``tf.train.Checkpoint`` / ``CheckpointManager``: ``save``, and ``restore`` as the resume),
    a model's ``save`` / ``save_weights`` and ``load_weights`` / ``load_model`` of a saved file."""
    ix = f.ix
    if not keras_file(ix):
        return
    trained = _trained_receivers(f)
    for c in ix.calls:
        q = c.qualname or ""
        head = q.partition("(")[0]
        if q in MODEL_CHECKPOINT | BACKUP_AND_RESTORE and c.assigned_to and not read_again(f, c.assigned_to):
            continue  # a callback built and never handed to fit(): it writes nothing
        if q in MODEL_CHECKPOINT:
            only = norm(f.val(c, "save_weights_only")) if f.present(c, "save_weights_only") else False
            f.add("checkpoint.save", {"via": "keras.ModelCheckpoint", "dir": _folder(f.val(c, "filepath", 0)),
                                      **({"weights_only": True} if only is True else {})}, c.node, q)
        elif q in BACKUP_AND_RESTORE:
            # the callback writes its backup each epoch and restores it when the job starts again
            f.add("checkpoint.save", {"via": "keras.BackupAndRestore", "dir": _plain(f.val(c, "backup_dir", 0))}, c.node, q)
            f.add("checkpoint.resume", {"via": "keras.BackupAndRestore"}, c.node, q)
        elif head in TF_CHECKPOINTS and q == head + "()." + c.attr and c.attr in ("save", "write"):
            where = _folder(f.val(c, "file_prefix", 0)) if head != "tensorflow.train.CheckpointManager" else None
            f.add("checkpoint.save", {"via": "tf.train.Checkpoint", "dir": where}, c.node, c.attr)
        elif head in TF_CHECKPOINTS and q == head + "()." + c.attr and c.attr in ("restore", "read"):
            f.add("checkpoint.resume", {"via": "tf.train.Checkpoint"}, c.node, c.attr)
        elif q in SAVED_MODEL:
            f.add("checkpoint.save", {"via": "keras.save", "dir": _folder(f.val(c, "filepath", 1))}, c.node, q)
        elif q in LOAD_MODEL:
            f.add("checkpoint.resume", {"via": "keras.load_model"}, c.node, q)
        elif c.attr in ("save", "save_weights") and _a_model(ix, c, trained):
            f.add("checkpoint.save", {"via": "keras.save", "dir": _folder(f.val(c, "filepath", 0)),
                                      **({"weights_only": True} if c.attr == "save_weights" else {})}, c.node, c.attr)
        elif c.attr == "load_weights" and _a_model(ix, c, trained):
            f.add("checkpoint.resume", {"via": "keras.load_weights"}, c.node, c.attr)


def _trained_receivers(f: Facts) -> set[str]:
    """The names the file compiles or trains (``model`` of ``model.compile(...)`` / ``model.fit(...)``)."""
    return {c.receiver for c in f.ix.calls if c.receiver and c.attr in TRAIN_METHODS | {"compile"} and _keras_object(f.ix, c)}


def _a_model(ix: PyIndex, c: Call, trained: set[str]) -> bool:
    """Is the receiver of a ``save`` / ``load_weights`` a Keras model: built by Keras, or a name the file trains
    (``image.save(path)`` of PIL, a DataFrame's, a local helper's are not)?"""
    q = c.qualname or ""
    if q:
        head = q.partition("(")[0]
        # ``keras.utils.array_to_img(x).save(path)`` saves a PIL image
        return q.startswith(_KERAS_OBJECTS) and head not in TF_CHECKPOINTS and "img" not in head.rsplit(".", 1)[-1]
    return c.receiver in trained


def _folder(target: Any) -> Any:
    """The folder of a literal file path (``"/opt/ml/checkpoints/ck-{epoch}.h5"`` -> ``/opt/ml/checkpoints``); None when
    the path is not a literal."""
    return (posixpath.dirname(target) or ".") if isinstance(target, str) else None


def _plain(v: Any) -> Any:
    return v if isinstance(v, str) else None


# -- distributed ----------------------------------------------------------------------------------------------------

#: tf.distribute strategies that keep a replica per GPU and all-reduce the gradients (Keras 3's DataParallel too)
STRATEGIES = {"tensorflow.distribute.MirroredStrategy", "tensorflow.distribute.MultiWorkerMirroredStrategy",
              "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy", "keras.distribution.DataParallel"}
HOROVOD_INIT = {"horovod.tensorflow.init", "horovod.tensorflow.keras.init", "horovod.keras.init"}


def distributed(f: Facts) -> None:
    """Data-parallel TensorFlow: a tf.distribute strategy, or Horovod (one process per GPU, ring all-reduce): the
    ``ddp`` facts a PyTorch DistributedDataParallel gives."""
    ix = f.ix
    for c in ix.calls_to(*STRATEGIES):
        f.add("ddp", {"via": c.qualname.rsplit(".", 1)[-1]}, c.node, c.qualname)
        break
    for c in ix.calls_to(*HOROVOD_INIT):
        f.add("ddp", {"via": "horovod"}, c.node, c.qualname)
        break


# -- input pipelines --------------------------------------------------------------------------------------------

#: receivers of a tf.data ``map``: a Dataset (or a TFDS load, which returns one), or a chain gpulint does not resolve
_DATASETS = ("tensorflow.data.", "tensorflow_datasets.")


def pipelines(f: Facts, purpose: Callable[[list[str]], str]) -> None:
    """A tf.data ``map`` whose function decodes media: the ``dataloader`` fact of that stage, its parallelism in
    ``num_workers`` (0 without ``num_parallel_calls``, None for ``AUTOTUNE`` or a value read at run time).
    ``purpose`` is loaders.py's reading of the names a loader is known by ("eval" for ``val_ds``), given the
    names of the pipeline: the one it is bound to, the names its source is built from, its function."""
    ix = f.ix
    if not ix.imports_any("tensorflow"):
        return
    for c in ix.method_calls("map"):
        q = c.qualname or ""
        fn = c.kwarg("map_func") or c.positional(0)
        if (q and not q.startswith(_DATASETS)) or fn is None or not _decodes(f, fn):
            continue
        given = c.kwarg("num_parallel_calls") or c.positional(1)
        workers = 0 if given is None else norm(f.ev.value(given, c.scope))
        f.add("dataloader", {"num_workers": workers, "pin_memory": None, "num_workers_set": given is not None,
                             "pin_memory_set": True, "via": "tf.data"}, c.node, "map",
              purpose=purpose(_pipeline_names(ix, c)), guards=list(c.guards))


def _pipeline_names(ix: PyIndex, c: Call) -> list[str]:
    """``val_ds`` of ``val_ds = tf.data.TFRecordDataset(val_files).map(decode).batch(64)``, and the words of the
    receiver (``val_files``) and of the enclosing function."""
    bound = next((a.target for a in ix.assigns if a.scope == c.scope and any(n is c.node for n in ast.walk(a.value))), "")
    return [bound.rsplit(".", 1)[-1], c.scope, *re.findall(r"\w+", c.receiver)]


def _decodes(f: Facts, fn: ast.expr) -> bool:
    """Does a map function decode media with TensorFlow's ops: a lambda holding the call, or a function of the file
    calling one (directly or through another function of the file)?"""
    decoders = tuple(d for d in MEDIA_DECODERS if d.startswith("tensorflow."))
    if fn.__class__ is ast.Lambda:
        return any(n.__class__ is ast.Call and (f.ix.call_at(n) and f.ix.call_at(n).qualname or "") in decoders
                   for n in ast.walk(fn))
    name = (dotted(fn) or "").rsplit(".", 1)[-1]
    scopes = {name}
    scopes |= {c.attr for c in f.ix.calls if c.scope == name and c.receiver in ("", "self")}
    return any(c.scope in scopes and (c.qualname or "") in decoders for c in f.ix.calls)
