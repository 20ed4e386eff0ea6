"""Modal apps: the GPUs a function decorated ``@app.function(gpu="A100-80GB:4")`` (or ``@app.cls(gpu=...)``) runs
on, and what it runs there.

Each such function is a compute target of source ``modal`` (``modal.App`` / the older ``modal.Stub``; an ``app``
imported from another module counts where the file imports ``modal``):

- ``compute.accelerator`` / ``compute.gpus_per_node`` from ``gpu=``: a shortcode ``"H100:8"`` (case-insensitive;
  ``H100!`` and ``B200+`` are the same GPU models; Modal's ``A10`` is the Ampere 24 GB part the catalogue calls
  A10G), the first choice of a fallback list (``gpu=["H100", "A100-80GB"]``), or the deprecated
  ``modal.gpu.A100(count=2, size="80GB")``; ``gpu="any"`` or a value chosen at run time is GPU compute of unknown
  model (``compute.gpu_only``);
- ``compute.node_count`` from ``@modal.experimental.clustered(size=N)`` (one container otherwise);
- ``compute.time_limit`` from ``timeout=`` (seconds; Modal's default is 300 s, said as the default);
- ``compute.capacity`` ``spot``, attrs.preemptible: Modal's documentation says every Function may be preempted and
  is restarted on the same input, and that ``nonpreemptible=True`` is not available for GPU Functions
  (https://modal.com/docs/guide/preemption), so long training has to checkpoint to survive it;
- ``storage.mount`` for each ``volumes={"/path": ...}`` entry: a Volume or cloud bucket outlives the container, whose
  own disk does not.

The function is the ``launch`` of this file on that target (tool ``modal``: its code is this file and what it
imports), unless its body starts a launcher itself (``subprocess.run(["accelerate", "launch", "train.py"])``,
``os.system("torchrun --nproc_per_node 8 train.py")``): that command, read as a shell line is, is the launch.
Modal bills per GPU-second at prices the catalogue does not hold: the target has no price (said in ``workloads``).
"""
from __future__ import annotations

import ast
import posixpath
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.python.common import Facts, norm
from gpulint.read.python.index import UNKNOWN, Call, OneOf
from gpulint.read.python.sagemaker import unique_target
from gpulint.read.python.subprocesses import COMMANDS, launches_of
from gpulint.read.shell.commands import empty_launch

_APPS = frozenset({"modal.App", "modal.Stub", "modal.app.App", "modal.stub.Stub"})
_DECORATORS = ("function", "cls")
#: Modal's default Function timeout, in seconds (https://modal.com/docs/guide/timeouts)
DEFAULT_TIMEOUT_S = 300
#: Modal GPU names that differ from the catalogue's spelling of the same model
_SAME_GPU = {"A10": "A10G"}


def modal_apps(f: Facts) -> None:
    if not f.ix.imports_any("modal"):
        return
    module = getattr(f.src, "syntax", None)
    if module is None:
        return
    me = posixpath.basename(f.src.path)
    images = _image_files(f)
    for node in ast.walk(module):
        if node.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            continue
        decorators = [f.ix.call_at(d) for d in node.decorator_list if d.__class__ is ast.Call]
        app = next((c for c in decorators if c is not None and _is_app_decorator(f, c)), None)
        if app is None or not f.present(app, "gpu"):
            continue
        gpu = _gpu(f, app)
        if gpu is None:
            continue  # gpu=None: a CPU container
        target = unique_target(f, f"modal@{node.name}")
        _compute(f, app, target, gpu, next((c for c in decorators if c is not None and _clustered(c)), None))
        launches = _body_launches(f, node, target, images)
        if not launches:
            # the container runs the function in one Python process
            f.out.append(Fact("launch", {**empty_launch("modal"), "script": me, "nproc_per_node": 1}, f.src.node_loc(app.node),
                              "modal", target, {"via": f"@{app.func}"}))


def _is_app_decorator(f: Facts, c: Call) -> bool:
    """``@app.function(...)`` / ``@app.cls(...)`` where ``app`` is a ``modal.App`` of this file or a name imported
    from another module (the project's shared ``app``)."""
    if c.attr not in _DECORATORS or not c.decorator or c.node.func.__class__ is not ast.Attribute:
        return False
    receiver = c.node.func.value
    if receiver.__class__ is not ast.Name:
        return False
    name = receiver.id
    if name in f.ix.imports or name in f.ix.relative_names:
        return True
    return any(a.value.__class__ is ast.Call and getattr(f.ix.call_at(a.value), "qualname", None) in _APPS
               for a in f.ix.assigns_of(name, ""))


def _clustered(c: Call) -> bool:
    """``@modal.experimental.clustered(size=N)`` (however ``modal.experimental`` was imported)."""
    return (c.qualname or "").endswith("experimental.clustered")


def _gpu(f: Facts, c: Call) -> dict | None:
    """{"type", "count", "written"} (type None: a GPU of a model not known here), or None for no GPU."""
    node = f.kwarg(c, "gpu")
    if node is not None and node.__class__ is ast.Call:
        return _gpu_object(f, f.ix.call_at(node))
    raw = f.val(c, "gpu")
    v = norm(raw)
    if v is None and raw is not UNKNOWN:
        return None  # gpu=None: no GPU
    if isinstance(v, list):
        v = v[0] if v and isinstance(v[0], str) else UNKNOWN  # the fallback list's first choice, tried first
    if v is None or isinstance(v, OneOf) or not isinstance(v, str) or not v.strip() or v.strip().lower() == "any":
        return {"type": None, "count": None, "written": ast.unparse(node) if node is not None else "?"}
    name, _, count = v.strip().partition(":")
    count_v: Any = int(count) if count.strip().isdigit() else (1 if not count else None)
    return {"type": _model(name), "count": count_v, "written": v}


def _gpu_object(f: Facts, c: Call | None) -> dict | None:
    """The deprecated ``modal.gpu.A100(count=2, size="80GB")``."""
    if c is None or not (c.qualname or "").startswith("modal.gpu."):
        return {"type": None, "count": None, "written": "?"}
    name = c.qualname.rsplit(".", 1)[-1]
    size = norm(f.val(c, "size")) if f.present(c, "size") else None
    if isinstance(size, str) and size.strip():
        name = f"{name}-{size.strip().upper()}"
    count = norm(f.val(c, "count")) if f.present(c, "count") else 1
    return {"type": _model(name), "count": count if type(count) is int else None, "written": ast.unparse(c.node)}


def _model(name: str) -> str:
    base = name.strip().upper().rstrip("!+")
    return _SAME_GPU.get(base, base)


def _compute(f: Facts, c: Call, target: str, gpu: dict, clustered: Call | None) -> None:
    def add(kind: str, value: Any, key: str, node: ast.AST | None = None, **attrs: Any) -> None:
        at = node if node is not None else (f.kwarg(c, key) if key else None)
        f.out.append(Fact(kind, value, f.src.node_loc(at if at is not None else c.node), key or "modal", target, attrs))

    add("compute.target", {"source": "modal", "provider": None, "resource": target, "role": None}, "", via="modal")
    if gpu["type"] is None:
        add("compute.gpu_only", f"gpu={gpu['written']}", "gpu")
    else:
        add("compute.accelerator", {"type": gpu["type"], "count": gpu["count"]}, "gpu")
        if gpu["count"] is not None:
            add("compute.gpus_per_node", gpu["count"], "gpu")
    if clustered is not None:
        size = norm(f.val(clustered, "size", 0))
        add("compute.node_count", size if type(size) is int else None, "size", f.kwarg(clustered, "size") or clustered.node)
    else:
        add("compute.node_count", 1, "")
    timeout = norm(f.val(c, "timeout")) if f.present(c, "timeout") else DEFAULT_TIMEOUT_S
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        add("compute.time_limit", round(timeout / 3600, 4), "timeout", **({} if f.present(c, "timeout") else {"default": True}))
    add("compute.capacity", "spot", "gpu", preemptible="a Modal GPU Function, which Modal may preempt and restart on "
        "the same input")
    for path in _volume_paths(f, c):
        # a path not known here is a mount of unknown path: no rule then calls the container's disk the only place
        add("storage.mount", {"path": path, "bucket": None, "mode": "volume" if path else None}, "volumes")
    if f.present(c, "network_file_systems") or f.present(c, "cloud_bucket_mounts") or \
            next(f.ix.method_calls("workdir"), None) is not None:
        # another durable mount, or an image whose working directory (where relative paths land) is not read here
        add("storage.mount", {"path": None, "bucket": None, "mode": None}, "network_file_systems")


def _volume_paths(f: Facts, c: Call) -> list[str | None]:
    """The container paths of ``volumes={"/runs": vol, VOL_DIR: other}`` (None for a key not known here, or for a
    table not read at all)."""
    if not f.present(c, "volumes"):
        return []
    node = f.kwarg(c, "volumes")
    if node.__class__ is ast.Name:
        bound = f.ix.assigns_of(node.id, c.scope) or f.ix.assigns_of(node.id, "")
        node = bound[0].value if len(bound) == 1 else None
    if node.__class__ is not ast.Dict or any(k is None for k in node.keys):
        return [None]
    out = []
    for k in node.keys:
        v = norm(f.ev.value(k, c.scope))
        out.append(v if isinstance(v, str) and v.startswith("/") else None)
    return out


_ADD_LOCAL = frozenset({"add_local_file", "add_local_dir", "copy_local_file", "copy_local_dir", "from_local_file",
                        "from_local_dir"})


def _image_files(f: Facts) -> dict[str, str]:
    """Container path -> the repository path it holds, from the images and mounts of this file
    (``image.add_local_file(Path(__file__).parent / "config.yml", "/root/config.yml")``, ``add_local_dir("configs",
    remote_path="/root/configs")``): a launch line naming ``/root/config.yml`` names that file. A path relative to this
    file's folder stays relative (the linker resolves a launch's paths from the launcher's folder, then the root)."""
    out: dict[str, str] = {}
    for name in _ADD_LOCAL:
        for c in f.ix.method_calls(name):
            local = _local_path(f, c.positional(0) if c.positional(0) is not None else f.kwarg(c, "local_path"), c.scope)
            remote = norm(f.ev.value(c.positional(1) if c.positional(1) is not None else f.kwarg(c, "remote_path"), c.scope))
            if local and isinstance(remote, str) and remote.startswith("/"):
                out[posixpath.normpath(remote)] = local
    return out


def _local_path(f: Facts, node: ast.expr | None, scope: str) -> str | None:
    """``"configs"`` or ``Path(__file__).parent / "configs"`` as a path relative to this file's folder (a plain string
    is relative to where ``modal run`` starts, which the linker tries next)."""
    if node is None:
        return None
    if node.__class__ is ast.BinOp and node.op.__class__ is ast.Div:
        right = norm(f.ev.value(node.right, scope))
        left = ast.unparse(node.left).replace(" ", "")
        if isinstance(right, str) and left in ("Path(__file__).parent", "Path(__file__).resolve().parent",
                                               "pathlib.Path(__file__).parent", "pathlib.Path(__file__).resolve().parent"):
            return posixpath.normpath(right)
        return None
    v = norm(f.ev.value(node, scope))
    return posixpath.normpath(v) if isinstance(v, str) and v and not v.startswith("/") else None


def _in_repo(text: str, images: dict[str, str]) -> str:
    """A container path the image fills from the repository, as that repository path; anything else as written."""
    for remote in sorted(images, key=len, reverse=True):
        if text == remote or text.startswith(remote + "/"):
            return posixpath.normpath(images[remote] + text[len(remote):])
        if text.startswith("--") and "=" in text:  # --config=/root/config.yml
            flag, _, value = text.partition("=")
            if value == remote or value.startswith(remote + "/"):
                return f"{flag}={posixpath.normpath(images[remote] + value[len(remote):])}"
    return text


def _body_launches(f: Facts, fn: ast.AST, target: str, images: dict[str, str]) -> list[Fact]:
    """The launcher commands the function (or the class's methods) starts, each a ``launch`` on the target."""
    found: list[Fact] = []
    scopes = {fn.name} if fn.__class__ is not ast.ClassDef else \
        {n.name for n in fn.body if n.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)}
    for c in f.ix.calls_to(*COMMANDS):
        if c.scope not in scopes or not (c.node.lineno >= fn.lineno and c.node.end_lineno <= fn.end_lineno):
            continue
        for value in launches_of(f, c, rewrite=lambda text: _in_repo(text, images)):
            fact = Fact("launch", value, f.src.node_loc(c.node), value["tool"], target, {"via": c.qualname})
            f.out.append(fact)
            found.append(fact)
    return found
