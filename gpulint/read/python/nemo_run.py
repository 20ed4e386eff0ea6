"""NeMo 2 recipes and the NeMo-Run executors that run them: what a ``run.run(recipe, executor=...)`` script trains,
in what precision, whether it checkpoints, and on which machines.

- A recipe (``llm.llama3_8b.pretrain_recipe(...)``, ``finetune_recipe``) in a file that runs one (``run.run``,
  ``Experiment.add``, ``run.cli.main``) trains on GPUs: ``trains``, ``uses_gpu`` (several where its
  ``num_nodes`` x ``num_gpus_per_node`` say so), ``precision`` (the recipes' trainer takes ``bf16_mixed()``;
  an assignment to ``recipe.trainer.plugins`` that gpulint reads decides instead, one it cannot read leaves it
  undecided), ``checkpoint.save`` (``default_log``'s ModelCheckpoint, unless ``recipe.log.ckpt = None``) and
  ``checkpoint.resume`` (``default_resume``'s AutoResume, or the fine-tuning recipes' restore, unless
  ``recipe.resume = None``; ``trainer.enable_checkpointing = False`` saves nothing). A recipe handed to a function
  gpulint does not read (NeMo's ``set_primary_perf_configs``) has an undecided precision. Recipes are also found
  through ``functools.partial(recipe, ...)(...)`` and a model module bound to a name (``model = llm.llama31_8b``).
  NeMo's recipe sources (nemo/collections/llm/recipes/*.py, recipes/log/default.py). The model's size and its
  Megatron parallelism are not modelled: the memory rules stay silent on recipes.
- A task built by hand, ``run.Partial(llm.finetune, trainer=run.Config(nl.Trainer, ...), resume=...)``, trains:
  its precision is the trainer config's plugin or ``precision=`` (undecided without one), it saves unless
  ``enable_checkpointing=False`` (Lightning's default ModelCheckpoint) and resumes with ``default_resume()`` or
  ``AutoResume(resume_if_exists=True)``.
- An executor is the job's machines, as a batch script's ``#SBATCH`` lines or a SkyPilot task are:
  ``SlurmExecutor(nodes=, gpus_per_node=, gres=, partition=, time=)`` a Slurm allocation,
  ``SkypilotExecutor(gpus=, gpus_per_node=, num_nodes=, cloud=, use_spot=, file_mounts=)`` a SkyPilot task
  (a ``gpus=`` decided at run time is GPU compute, never SkyPilot's CPU default); their ``env_vars`` (given, or
  assigned as ``executor.env_vars = {...}``) are the job's environment. Values follow factory parameters, the
  quickstart's ``nodes=recipe.trainer.num_nodes`` and flags (their defaults: the script is run by hand). Local and
  Docker executors run on the machine at hand (no compute target of their own); DGX Cloud and Lepton name
  no machine gpulint can price.
- The run call that pairs a task with an executor is the ``launch`` of this file on that executor's target
  (``run.Script(path)`` launches that script instead; ``Experiment(executor=ex)`` is the executor of the tasks
  added without one). Both are followed through a name bound to them and the functions of the module that build
  them; a name bound on several paths, or a factory that builds several, launches on each (a local one on none).
  Its process count is the recipe's ``num_gpus_per_node`` (MEM004 below the executor's GPUs).
"""
from __future__ import annotations

import ast
import posixpath
from typing import Any

from gpulint.core.facts import is_cli
from gpulint.core.model import Fact
from gpulint.read.python.common import Facts, norm, qualified
from gpulint.read.python.index import UNKNOWN, Call, OneOf, dotted
from gpulint.read.python.sagemaker import unique_target
from gpulint.read.shell.commands import empty_launch
from gpulint.read.shell.slurm import job_gpus, slurm_hours
from gpulint.read.skypilot import file_mount, parse_accelerator

_RECIPES = ("pretrain_recipe", "finetune_recipe", "pretrain_recipe_performance")
_RUNS = frozenset({"nemo_run.run", "nemo_run.run.run", "nemo_run.submit"})
_CLI_MAIN = frozenset({"nemo_run.cli.main", "nemo_run.cli.main.main"})
_EXECUTORS = frozenset({"SlurmExecutor", "SkypilotExecutor", "SkypilotJobsExecutor", "LocalExecutor", "DockerExecutor",
                        "DGXCloudExecutor", "LeptonExecutor"})
#: executors whose machines gpulint reads (Local and Docker run on the machine at hand, as by hand; DGX Cloud and
#: Lepton name none it can price)
_REMOTE = frozenset({"SlurmExecutor", "SkypilotExecutor", "SkypilotJobsExecutor"})
_CLOUDS = {"aws": "aws", "gcp": "gcp", "azure": "azure"}
#: NeMo's precision plugin factories (nemo/collections/llm/recipes/precision/mixed_precision.py) by the dtype they set
_PLUGINS = {"bf16_mixed": "bf16", "fp16_mixed": "fp16", "bf16_with_fp8_mixed": "bf16", "fp16_with_fp8_mixed": "fp16",
            "bf16_with_mxfp8_mixed": "bf16", "fp16_with_mxfp8_mixed": "fp16", "bf16_with_fp8_current_scaling_mixed": "bf16",
            "bf16_with_fp8_subchannel_scaling_mixed": "bf16", "nemotron_h_bf16_with_fp8_current_scaling_mixed": "bf16"}


def _named(f: Facts, node: ast.expr) -> str:
    """The qualified name an expression refers to (``llm.finetune`` -> ``nemo.collections.llm.finetune``); "" for a
    call, whose result is no name."""
    return "" if node.__class__ is ast.Call else qualified(f, node)


def _recipe_name(q: str | None) -> bool:
    return bool(q) and q.startswith("nemo.collections.") and q.rsplit(".", 1)[-1] in _RECIPES


def _recipes_in(f: Facts):
    """The predicate of a recipe call in this file: ``llm.llama3_8b.pretrain_recipe(...)``, and one made through
    ``functools.partial(llm.llama3_8b.pretrain_recipe, num_nodes=n)(name=...)`` (the call of the partial)."""
    def want(c: Call) -> bool:
        return _recipe_name(c.qualname) or _partial_of(f, c) is not None or _model_module(f, c) is not None or \
            _api_task(f, c)
    return want


#: NeMo 2's training entry points (nemo/collections/llm/api.py), which a hand-built task wraps
_API = frozenset({"nemo.collections.llm.api.pretrain", "nemo.collections.llm.api.finetune", "nemo.collections.llm.api.train",
                  "nemo.collections.llm.pretrain", "nemo.collections.llm.finetune", "nemo.collections.llm.train"})
_PARTIAL = frozenset({"nemo_run.Partial", "nemo_run.config.Partial"})
_CONFIG = frozenset({"nemo_run.Config", "nemo_run.config.Config"})
_TRAINERS = frozenset({"nemo.lightning.Trainer", "nemo.lightning.pytorch.trainer.Trainer"})


def _api_task(f: Facts, c: Call) -> bool:
    """``run.Partial(llm.finetune, model=..., trainer=run.Config(nl.Trainer, ...), ...)``: a task built by hand."""
    return c.qualname in _PARTIAL and bool(c.node.args) and _named(f, c.node.args[0]) in _API


def _model_module(f: Facts, c: Call) -> str | None:
    """``model = llm.llama31_8b`` (or ``llm.a if big else llm.b``) then ``model.pretrain_recipe(...)``: the recipe of
    a model module bound to a name; the first module's name when the binding is a choice."""
    if c.qualname is not None or c.attr not in _RECIPES or not c.receiver.isidentifier():
        return None
    mods = []
    for a in f.ix.bindings(c.receiver, c.scope, c.node) or []:
        values = [a.value.body, a.value.orelse] if a.value.__class__ is ast.IfExp else [a.value]
        for v in values:
            q = _named(f, v) if isinstance(v, ast.expr) else ""
            if not q.startswith("nemo.collections."):
                return None
            mods.append(q)
    return f"{mods[0]}.{c.attr}" if mods else None


def _partial_of(f: Facts, c: Call) -> Call | None:
    """The ``functools.partial(recipe, ...)`` call that `c` calls, when it wraps a recipe."""
    if c.qualname is not None or c.node.func.__class__ is not ast.Call:
        return None
    inner = f.ix.call_at(c.node.func)
    if inner is None or inner.qualname != "functools.partial" or not inner.node.args:
        return None
    return inner if _recipe_name(_named(f, inner.node.args[0])) else None


def _rval(f: Facts, r: Call, kw: str) -> Any:
    """A recipe's argument: given to the call, or bound in the partial it calls."""
    inner = _partial_of(f, r)
    return f.val(inner, kw) if not f.present(r, kw) and inner is not None else f.val(r, kw)


def _recipe_label(f: Facts, r: Call) -> str:
    inner = _partial_of(f, r)
    if inner is not None:
        return _named(f, inner.node.args[0])
    return r.qualname or _model_module(f, r) or ""


def _executor_class(c: Call) -> str | None:
    q = c.qualname or ""
    last = q.rsplit(".", 1)[-1]
    return last if q.startswith("nemo_run.") and last in _EXECUTORS else None


def _is_script(c: Call) -> bool:
    q = c.qualname or ""
    return q in ("nemo_run.Script", "nemo_run.config.Script")


def _runs(f: Facts) -> list[tuple[Call, ast.expr | None, ast.expr | None]]:
    """(run call, its task, its executor) of every call that runs a task: ``run.run(task, executor=ex)``,
    ``exp.add(task, executor=ex)`` in a file that uses NeMo-Run, and ``run.cli.main(fn)``."""
    out = []
    uses_run = any((c.qualname or "").startswith("nemo_run.") for c in f.ix.calls)
    # ``with run.Experiment(name, executor=ex) as exp: exp.add(task)``: the experiment's executor runs its tasks
    experiments = [c for c in f.ix.calls if c.qualname in ("nemo_run.Experiment", "nemo_run.run.experiment.Experiment")
                   and c.kwarg("executor") is not None]
    for c in f.ix.calls:
        q = c.qualname or ""
        if q in _RUNS or (uses_run and c.attr == "add" and c.receiver):
            task = c.kwarg("task") or c.positional(0)
            ex = c.kwarg("executor") if c.kwarg("executor") is not None else c.positional(1)
            if ex is None and q not in _RUNS:
                around = [e for e in experiments if e.scope == c.scope]
                if len(around) != 1:
                    continue  # some other object's add()
                ex = around[0].kwarg("executor")
            out.append((c, task, ex))
        elif q in _CLI_MAIN:
            out.append((c, c.kwarg("fn") or c.positional(0), c.kwarg("default_executor")))
    return out


def _built(f: Facts, node: ast.expr | None, scope: str, want, depth: int = 0) -> list[Call]:
    """The calls `want` accepts that `node` evaluates to: the call itself, the call a name is bound to (each
    binding), or the ones a function of the module makes (``executor = slurm_executor(...)``)."""
    if node is None or depth > 3:
        return []
    if node.__class__ is ast.Call:
        c = f.ix.call_at(node)
        if c is None:
            return []
        if want(c):
            return [c]
        if c.func in f.ix.top_functions:
            inner = [o for o in f.ix.calls if o.scope == c.func and want(o)]
            if inner:
                return inner  # each construction the factory may return (``slurm if cluster else local``)
            returned = [o for o in f.ix.calls if o.scope == c.func and o.func in f.ix.top_functions and o.func != c.func]
            found = [x for o in returned for x in _built(f, o.node, o.scope, want, depth + 1)]
            return found if len({id(x) for x in found}) == 1 else []
        return []
    if node.__class__ is ast.IfExp:  # ``slurm_executor() if cluster else run.LocalExecutor()``: either
        return [x for branch in (node.body, node.orelse) for x in _built(f, branch, scope, want, depth + 1)]
    if node.__class__ is ast.Name:
        out: list[Call] = []
        for a in f.ix.bindings(node.id, scope, node) or []:
            if isinstance(a.value, ast.expr):
                out += [x for x in _built(f, a.value, a.scope, want, depth + 1) if x not in out]
        return out
    return []


def _recipe_runs(f: Facts, runs: list) -> list[Call]:
    """The recipes the file runs (a run call's task, or a recipe of a file whose run call's task cannot be
    followed: the recipe is what it runs)."""
    if not runs:
        return []
    found: list[Call] = []
    for c, task, _ in runs:
        found += [r for r in _built(f, task, c.scope, _recipes_in(f)) if r not in found]
    if not found:
        found = [r for r in f.ix.calls if _recipes_in(f)(r)]
    return found


# -- recipes: training, precision, checkpoints --------------------------------------------------------
def nemo_run(f: Facts) -> None:
    """The pass: a file that imports neither NeMo nor NeMo-Run holds none of their calls (their qualified names come
    from those imports), so it costs one look at its imports; the run calls are found once for both readers."""
    if not f.ix.imports_any("nemo_run", "nemo"):
        return
    runs = _runs(f)
    recipes(f, runs)
    executors(f, runs)


def recipes(f: Facts, runs: list) -> None:
    recipes_run = _recipe_runs(f, runs)
    if not recipes_run:
        return
    plugins = _assigned(f, (".trainer.plugins", ".trainer.plugins.precision", ".trainer.precision"))
    for r in recipes_run:
        if _api_task(f, r):
            _hand_built(f, r)
            continue
        label = _recipe_label(f, r)
        f.add("trains", {"via": "nemo2_recipe"}, r.node, label)
        nodes, gpus = _count(f, r, "num_nodes"), _count(f, r, "num_gpus_per_node")
        several = {"several": True} if (isinstance(nodes, int) and nodes > 1) or (isinstance(gpus, int) and gpus > 1) else {}
        f.add("uses_gpu", {"via": "nemo2_recipe", **several}, r.node, label)
        helper = _handed_to(f, r)
        if helper:
            # ``set_primary_perf_configs(recipe, compute_dtype="fp8")``: a function gpulint does not read configures it
            f.add("precision", {"mechanism": "lightning", "dtype": None, "enabled": None,
                                "undecided": f"the recipe is handed to {helper}, which may set its precision"}, r.node, label)
        elif not plugins:
            f.add("precision", {"mechanism": "lightning", "dtype": "bf16", "enabled": True, "via": "nemo2_recipe bf16_mixed()"},
                  r.node, label)
        ckpt_off = any(_none(a.value) for a in _assigned(f, (".log.ckpt", ".log"))) or \
            any(a.value.__class__ is ast.Constant and a.value.value is False for a in _assigned(f, (".trainer.enable_checkpointing",)))
        if not ckpt_off:
            d = norm(_rval(f, r, "dir"))
            changed = {"may_change": f"the recipe is handed to {helper}"} if helper else {}
            f.add("checkpoint.save", {"via": "nemo2_recipe", "dir": d if isinstance(d, str) else None, **changed}, r.node, label)
        if not any(_none(a.value) for a in _assigned(f, (".resume",))):
            how = "default_resume" if label.endswith("pretrain_recipe") else "AutoResume"
            f.add("checkpoint.resume", {"via": f"nemo2_recipe {how}"}, r.node, label)
    for a in plugins:
        f.add("precision", _plugin_precision(f, a.value, a.scope), a.node, a.target)


def _hand_built(f: Facts, task: Call) -> None:
    """A hand-built task: it trains; its trainer config says where and in what precision (a ``plugins=`` or
    ``precision=`` gpulint reads, a recipe module's trainer factory with its bf16_mixed(); otherwise undecided);
    Lightning checkpoints unless the trainer switches them off; it resumes where its ``resume=`` says so."""
    from gpulint.read.python.frameworks.lightning import precision_value

    label = _named(f, task.node.args[0])
    f.add("trains", {"via": "nemo2_task"}, task.node, label)
    trainers = _built(f, f.kwarg(task, "trainer"), task.scope, lambda c: _trainer_config(f, c) is not None)
    trainer = trainers[0] if len(trainers) == 1 else None
    kind = _trainer_config(f, trainer) if trainer is not None else None
    if trainer is None or _val(f, trainer, "accelerator") != "cpu":
        several = trainer is not None and any(type(v) is int and v > 1 for v in
                                              (_val(f, trainer, "devices"), _val(f, trainer, "num_nodes")))
        f.add("uses_gpu", {"via": "nemo2_task", **({"several": True} if several else {})}, task.node, label)
    if trainer is not None and f.present(trainer, "plugins"):
        value = _plugin_precision(f, f.kwarg(trainer, "plugins"), trainer.scope)
    elif trainer is not None and f.present(trainer, "precision"):
        value = {**precision_value(f.val(trainer, "precision")), "via": "nemo2 trainer precision"}
    elif kind == "recipe":
        value = {"mechanism": "lightning", "dtype": "bf16", "enabled": True, "via": "nemo2 recipe trainer bf16_mixed()"}
    else:
        value = {"mechanism": "lightning", "dtype": None, "enabled": None,
                 "undecided": "the task's trainer sets no precision plugin gpulint reads"}
    f.add("precision", {**value, "mechanism": "lightning"}, trainer.node if trainer is not None and
          (f.present(trainer, "plugins") or f.present(trainer, "precision")) else task.node, label)
    if trainer is None or _val(f, trainer, "enable_checkpointing") is not False:
        f.add("checkpoint.save", {"via": "nemo2_task", "dir": None}, task.node, label)
    resume = f.kwarg(task, "resume")
    if resume is not None and _resumes(f, resume, task.scope):
        f.add("checkpoint.resume", {"via": "nemo2_task AutoResume"}, resume, label)


def _trainer_config(f: Facts, c: Call) -> str | None:
    """"trainer" for ``run.Config(nl.Trainer, ...)`` / ``nl.Trainer(...)``, "recipe" for a recipe module's trainer
    factory (``llm.recipes.nemotron.nemotron_trainer(...)``, bf16_mixed() by default)."""
    q = c.qualname or ""
    if q in _TRAINERS or (q in _CONFIG and c.node.args and _named(f, c.node.args[0]) in _TRAINERS):
        return "trainer"
    return "recipe" if q.startswith("nemo.collections.llm.recipes.") and q.endswith("trainer") else None


def _resumes(f: Facts, node: ast.expr, scope: str) -> bool:
    """``default_resume()`` or an AutoResume with ``resume_if_exists=True``."""
    for c in _built(f, node, scope, lambda c: (c.qualname or "").endswith(("default_resume", "AutoResume", "Config"))):
        if (c.qualname or "").endswith("default_resume") or _val(f, c, "resume_if_exists") is True:
            return True
    return False


def _handed_to(f: Facts, r: Call) -> str | None:
    """The function outside this file and outside NeMo-Run that a name bound to recipe `r` is passed to, if any."""
    want = _recipes_in(f)
    for c in f.ix.calls:
        q = c.qualname or ""
        if c is r or c.func in f.ix.top_functions or q.startswith("nemo_run.") or q in _BUILTINS or c.attr in ("add", "run"):
            continue
        for a in [*c.node.args, *(kw.value for kw in c.node.keywords)]:
            if a.__class__ is ast.Name and r in _built(f, a, c.scope, want):
                return c.func
    return None


_BUILTINS = frozenset({"print", "len", "str", "repr", "isinstance", "getattr", "hasattr", "type", "id", "vars", "dir"})


def _assigned(f: Facts, suffixes: tuple[str, ...]):
    return [a for a in f.ix.assigns if "." in a.target and a.target.endswith(suffixes) and isinstance(a.value, ast.expr)]


def _none(node: Any) -> bool:
    return node.__class__ is ast.Constant and node.value is None


def _count(f: Facts, c: Call, kw: str) -> int | None:
    v = _rval(f, c, kw)
    return v if type(v) is int else None


def _plugin_precision(f: Facts, node: ast.expr, scope: str) -> dict:
    """``recipe.trainer.plugins = bf16_mixed()`` / ``run.Config(MegatronMixedPrecision, precision="16-mixed")`` /
    ``recipe.trainer.plugins.precision = "32"``: the precision it sets; undecided where it is not read."""
    from gpulint.read.python.frameworks.lightning import precision_value

    base = {"mechanism": "lightning", "via": "nemo2 recipe.trainer.plugins"}
    if node.__class__ is ast.Name:  # ``precision = run.Config(nl.MegatronMixedPrecision, ...)``, then ``plugins=precision``
        bound = _built(f, node, scope, lambda c: True)
        if len(bound) == 1:
            node = bound[0].node
    if node.__class__ is ast.Call:
        c = f.ix.call_at(node)
        name = ((c.qualname or c.func) if c is not None else "").rsplit(".", 1)[-1]
        if name in _PLUGINS:
            return {**base, "dtype": _PLUGINS[name], "enabled": True}
        if c is not None and name in ("Config", "MegatronMixedPrecision") and f.present(c, "precision"):
            return {**precision_value(f.val(c, "precision")), **base}
        return {**base, "dtype": None, "enabled": None}
    return {**precision_value(f.ev.value(node, scope)), **base}


# -- executors: compute, launch, env ------------------------------------------------------------------
def executors(f: Facts, runs: list) -> None:
    targets: dict[int, str] = {}
    for c in f.ix.calls:
        cls = _executor_class(c)
        if cls not in _REMOTE:
            continue
        target = unique_target(f, f"{cls}@{c.assigned_to or c.scope or 'executor'}")
        targets[id(c.node)] = target
        if cls == "SlurmExecutor":
            _slurm(f, c, target)
        else:
            _skypilot(f, c, target)
            _mounts(f, c, target)
        _env(f, c, target)
    if not targets:
        return
    me = posixpath.basename(f.src.path)
    for run, task, ex in runs:
        for e in _built(f, ex, run.scope, lambda o: _executor_class(o) is not None):
            target = targets.get(id(e.node))
            if target is None:
                continue  # a local executor: the script runs where it is started
            _launch(f, run, task, e, target, me)


def _add(f: Facts, c: Call, kind: str, value: Any, kw: str, target: str, **attrs: Any) -> None:
    node = f.kwarg(c, kw) if kw else None
    f.out.append(Fact(kind, value, f.src.node_loc(node if node is not None else c.node), kw or c.qualname, target, attrs))


#: what a recipe's trainer attributes are set from: the quickstart's ``executor(nodes=recipe.trainer.num_nodes,
#: devices=recipe.trainer.devices)`` sizes the job as the recipe is sized
_RECIPE_SIZES = {"num_nodes": "num_nodes", "devices": "num_gpus_per_node"}


def _val(f: Facts, c: Call, kw: str) -> Any:
    """An executor argument's value, also where it is ``recipe.trainer.num_nodes`` / ``.devices`` (directly, or as
    the argument every call of the executor's factory function passes for the parameter it names). A flag's value
    (``nodes=args.num_nodes``) is its default: the script is started by hand, and nothing in the repository passes
    the flag (a launcher that does is not followed into the executor's arguments)."""
    v = f.val(c, kw)
    if is_cli(v):
        return v.get("default") if not v.get("default_unknown") and isinstance(v.get("default"), (int, str)) else UNKNOWN
    if v is not UNKNOWN:
        return v
    node = f.kwarg(c, kw)
    found = [(node, c.scope)] if node is not None else []
    if node.__class__ is ast.Name and node.id in f.ix.params.get(c.scope, ()):
        found = f.ev._arguments(node.id, c.scope, 0) or []
    values = {_recipe_size(f, n, at) for n, at in found}
    return values.pop() if len(values) == 1 and None not in values else UNKNOWN


def _recipe_size(f: Facts, node: ast.expr, scope: str) -> int | None:
    parts = node.__class__ is ast.Attribute and (dotted(node) or "").split(".")
    if not parts or len(parts) != 3 or parts[1] != "trainer" or parts[2] not in _RECIPE_SIZES:
        return None
    recipes = _built(f, ast.Name(id=parts[0], ctx=ast.Load(), lineno=node.lineno, col_offset=node.col_offset), scope, _recipes_in(f))
    return _count(f, recipes[0], _RECIPE_SIZES[parts[2]]) if len(recipes) == 1 else None


def _word(v: Any) -> str | None:
    return v if isinstance(v, str) and v.strip() and "$" not in v else None


def _slurm(f: Facts, c: Call, target: str) -> None:
    part = _word(norm(_val(f, c, "partition")))
    _add(f, c, "compute.target", {"source": "slurm", "provider": None, "resource": target, "role": None, "partition": part},
         "", target, via="nemo_run")
    opts: dict[str, str] = {}
    for kw in ("gpus_per_node", "gres", "gpus_per_task", "nodes", "ntasks_per_node"):
        v = _val(f, c, kw) if f.present(c, kw) else None
        if type(v) is int or isinstance(v, str):
            opts[kw] = str(v)
        elif f.present(c, kw) and kw != "nodes" and not (v is None or _none(f.kwarg(c, kw))):
            opts[kw] = "?"  # asked for, by a value not known here: the count is unknown
    got = job_gpus({k: v for k, v in opts.items()})
    if got is not None:
        count, kind, key = got
        _add(f, c, "compute.gpus_per_node", count, key, target)
        if kind:
            _add(f, c, "compute.accelerator", {"type": kind, "count": count}, key, target)
    nodes = _val(f, c, "nodes") if f.present(c, "nodes") else 1  # SlurmExecutor.nodes defaults to 1
    _add(f, c, "compute.node_count", nodes if type(nodes) is int else None, "nodes", target)
    time = norm(_val(f, c, "time"))
    hours = slurm_hours(time) if isinstance(time, str) else None
    if hours is not None:
        _add(f, c, "compute.time_limit", hours, "time", target)


def _skypilot(f: Facts, c: Call, target: str) -> None:
    cloud = _word(norm(_val(f, c, "cloud")))
    attrs = {"via": "nemo_run", **({"infra": cloud} if cloud else {})}
    _add(f, c, "compute.target", {"source": "skypilot", "provider": _CLOUDS.get((cloud or "").lower()), "resource": target,
                                  "role": None}, "", target, **attrs)
    gpus = norm(_val(f, c, "gpus"))
    per = _val(f, c, "gpus_per_node") if f.present(c, "gpus_per_node") else None
    if f.present(c, "gpus") and not _word(gpus) and not _none(f.kwarg(c, "gpus")):
        # ``gpus=args.gpu_type``: GPUs of a type chosen at run time (SkyPilot would otherwise start a CPU node)
        _add(f, c, "compute.gpu_only", f"gpus={ast.unparse(f.kwarg(c, 'gpus'))}", "gpus", target)
    if _word(gpus):
        # "A100:8" names its count; else gpus_per_node does (unknown where it is not read), one GPU when it is absent
        acc = parse_accelerator(gpus, (per if type(per) is int else UNKNOWN) if f.present(c, "gpus_per_node") else None)
        _add(f, c, "compute.accelerator", acc, "gpus", target)
        _add(f, c, "compute.gpus_per_node", acc["count"], "gpus_per_node" if f.present(c, "gpus_per_node") else "gpus", target)
    nodes = _val(f, c, "num_nodes") if f.present(c, "num_nodes") else 1
    _add(f, c, "compute.node_count", nodes if type(nodes) is int else None, "num_nodes", target)
    spot = _val(f, c, "use_spot")
    if isinstance(spot, bool):
        _add(f, c, "compute.capacity", "spot" if spot else "on-demand", "use_spot", target)



def _mounts(f: Facts, c: Call, target: str) -> None:
    """What persists past the node: ``file_mounts`` buckets (read as a SkyPilot task's ``file_mounts``), and a mount
    that is not read (``executor.file_mounts = mounts``, a Kubernetes volume in ``cluster_config_overrides``) as a
    mount of unknown path, so that no rule calls the node's disk the only place checkpoints go."""
    given = f.val(c, "file_mounts") if f.present(c, "file_mounts") else {}
    unread = not isinstance(given, dict) or f.present(c, "cluster_config_overrides") or f.present(c, "storage_mounts") or \
        any(a.target in (f"{c.assigned_to}.file_mounts", f"{c.assigned_to}.storage_mounts") for a in f.ix.assigns if c.assigned_to)
    for path, spec in (given.items() if isinstance(given, dict) else ()):
        value = file_mount(path, spec)
        if value is not None:
            _add(f, c, "storage.mount", value, "file_mounts", target)
    if unread:
        _add(f, c, "storage.mount", {"path": None, "bucket": None, "mode": None}, "file_mounts", target)


def _env(f: Facts, c: Call, target: str) -> None:
    """``env_vars={...}`` of the executor, and ``executor.env_vars = {...}`` assigned to the name it is bound to."""
    tables = []
    v = f.val(c, "env_vars")
    if isinstance(v, dict):
        tables.append((v, f.kwarg(c, "env_vars")))
    if c.assigned_to:
        for a in f.ix.assigns:
            if a.target == f"{c.assigned_to}.env_vars" and a.scope == c.scope and isinstance(a.value, ast.expr):
                val = f.ev.value(a.value, a.scope)
                if isinstance(val, dict):
                    tables.append((val, a.value))
    for table, node in tables:
        for k, val in table.items():
            if isinstance(k, str) and not isinstance(val, (dict, list, OneOf)) and val is not UNKNOWN:
                f.out.append(Fact("env", {"name": k, "value": None if val is None else str(val)},
                                  f.src.node_loc(node if node is not None else c.node), "env_vars", target, {}))


def _launch(f: Facts, run: Call, task: ast.expr | None, executor: Call, target: str, me: str) -> None:
    scripts = _built(f, task, run.scope, _is_script)
    procs = None
    if scripts:
        path = _word(norm(f.val(scripts[0], "path", 0)))
        if path is None or len(scripts) > 1:
            return  # an inline script or one chosen at run time: what it runs is not read
        script = path
    else:
        script = me  # the task (a recipe, a run.Partial of a function) runs this file's code on the executor
        recipes = _built(f, task, run.scope, _recipes_in(f))
        if len(recipes) == 1:
            procs = _count(f, recipes[0], "num_gpus_per_node")
    nodes = _val(f, executor, "nodes" if _executor_class(executor) == "SlurmExecutor" else "num_nodes")
    value = {**empty_launch("nemo_run"), "script": script, "nnodes": nodes if type(nodes) is int else None,
             "nproc_per_node": procs}
    f.out.append(Fact("launch", value, f.src.node_loc(run.node), run.qualname or run.attr, target,
                      {"via": _executor_class(executor)}))
