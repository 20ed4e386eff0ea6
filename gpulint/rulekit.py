"""The one module a rule author imports from: gpulint's stable rule-writing API.

Built-in rule packs (``gpulint.rules``) and outside plugins import everything
they need from here, so the host's internal layout (``gpulint.core``,
``gpulint.resolve``, ``gpulint.pricing`` ...) can change without breaking a
rule::

    from gpulint.rulekit import Example, Expect, Rule, Severity, compute_of, compute_related, hookimpl, trains_on_gpu

    class MyRule(Rule):
        code = "XYZ001"
        ...
        def check_workload(self, wl, ctx):
            trains = trains_on_gpu(wl)          # the fact that shows GPU training, or None
            if trains is None:
                return
            c = compute_of(wl)                  # ResolvedCompute, or None when the compute is unknown
            ...
            yield self.finding(trains.loc, "...", related=compute_related(wl))

    @hookimpl
    def gpulint_rules():
        return [MyRule]

What is here, by subject:

* writing a rule: ``Rule``, ``Example``, ``Expect``, ``hookimpl``; the finding's
  parts ``Severity``, ``Location``, ``Related``, ``CostImpact``, ``Fact``;
* the typed model rules read: ``Workload``, ``ResolvedCompute``, the device kinds
  ``GPU``/``CPU``/``UNKNOWN`` and the roles ``TRAINING``/``INFERENCE``/``BATCH``;
* questions of a workload (``gpulint.resolve.questions``): ``trains_on_gpu``,
  ``on_gpu``, ``gpu_evidence``, ``multi_gpu``, ``toy_workload`` ...;
* cost (``gpulint.resolve.cost``): ``compute_of``, ``avoidable``, ``unpriced``,
  ``price_basis``;
* precision, memory and fit (``gpulint.resolve``): ``flag_value``,
  ``resolve_cli``, the memory estimates and the MEM rules' fit model;
* instance families: ``pre_tensor_core``, ``looks_like_gpu_instance``;
* fixes: the ``fixes`` module (``fixes.enable_bf16(fact, wl)`` ...).

Nothing here computes anything: each name is the host's own, re-exported.
"""
from __future__ import annotations

from gpulint.core.families import looks_like_gpu_instance, pre_tensor_core
from gpulint.core.model import CostImpact, Fact, Finding, Location, Related, Severity
from gpulint.hookspecs import hookimpl
from gpulint.link.workloads import Workload
from gpulint.resolve.cost import avoidable, compute_of, price_basis, unpriced
from gpulint.resolve.memfit import (
    FIT_SHARE_COUNTED, FIT_SHARE_LOWER_BOUND, GB, OPT_WORDS, Profile, cheaper_fit, checkpointing_needed,
    conservative_estimate, fit_inputs, fits, idle_gpus, mem002_confidence, model_parallel_hint, optimistic_per_gpu,
    optimistic_training, processes_per_node, profile, shape_of, sharding_of, uses_multi_gpu,
)
from gpulint.resolve.memory import Estimate, GiB, TrainingSetup, estimate_inference, estimate_training
from gpulint.resolve.precision import flag_value, resolve_cli
from gpulint.resolve.questions import (
    GPU_LAUNCHERS, NOTEBOOK_MACHINE_UNKNOWN, OFF_GPU_HOST, WEAK_GPU_EVIDENCE, benchmark_of, compute_related,
    gpu_evidence, gpu_phrase, gpu_spend_unknown, launch_trains_on_gpu, multi_gpu, on_gpu, toy_workload, training_fact, trains_on_gpu,
    unsized_spend,
)
from gpulint.resolve.results import BATCH, CPU, GPU, INFERENCE, TRAINING, UNKNOWN, ResolvedCompute
from gpulint.resolve.scale import LARGE_MODEL_PARAMS
from gpulint.rule import Example, Expect, Rule
from gpulint.core import fixes

__all__ = [
    # writing a rule
    "Example", "Expect", "Rule", "hookimpl",
    "CostImpact", "Fact", "Finding", "Location", "Related", "Severity",
    # the typed model
    "Workload", "ResolvedCompute", "GPU", "CPU", "UNKNOWN", "TRAINING", "INFERENCE", "BATCH",
    # questions of a workload
    "GPU_LAUNCHERS", "NOTEBOOK_MACHINE_UNKNOWN", "OFF_GPU_HOST", "WEAK_GPU_EVIDENCE", "benchmark_of",
    "compute_related", "gpu_evidence", "gpu_phrase", "gpu_spend_unknown", "launch_trains_on_gpu", "multi_gpu", "on_gpu", "toy_workload",
    "training_fact", "trains_on_gpu", "unsized_spend",
    # cost
    "avoidable", "compute_of", "price_basis", "unpriced",
    # precision
    "flag_value", "resolve_cli",
    # memory and fit
    "Estimate", "GiB", "TrainingSetup", "estimate_inference", "estimate_training", "LARGE_MODEL_PARAMS",
    "FIT_SHARE_COUNTED", "FIT_SHARE_LOWER_BOUND", "GB", "OPT_WORDS", "Profile", "cheaper_fit", "checkpointing_needed",
    "conservative_estimate", "fit_inputs", "fits", "idle_gpus", "mem002_confidence", "model_parallel_hint",
    "optimistic_per_gpu", "optimistic_training", "processes_per_node", "profile", "shape_of", "sharding_of",
    "uses_multi_gpu",
    # instance families
    "looks_like_gpu_instance", "pre_tensor_core",
    # fixes
    "fixes",
]
