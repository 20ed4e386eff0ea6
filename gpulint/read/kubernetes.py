"""Kubernetes manifests -> compute, env and launch facts.

Input is already-parsed YAML (``gpulint.read.yamlnodes.Doc``); this module never
raises on odd shapes: a value of the wrong type is simply unknown (``None``) or
skipped. One *target* per workload object and per replica spec, e.g.
``PyTorchJob/llama-ft/Worker``; a pod template becomes a compute target only
when it shows an accelerator signal (GPU/TPU/Neuron/EFA resources, or an
instance-type / accelerator selector), so CPU services stay silent.

Also holds the small YAML helpers the SkyPilot and cloud-ML readers share
(``dotted``, ``as_int``, ``FactSink``, ``launches_from_script``, ``emit_step``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from gpulint.core.families import looks_like_gpu_instance
from gpulint.core.model import Fact, Location
from gpulint.read.cron import runs_per_month
from gpulint.read.packaged import TRAINERS
from gpulint.read.yamlnodes import Doc

# --------------------------------------------------------------------------- shared helpers


def dotted(path: Iterable) -> str:
    """``("spec", "containers", 0, "env")`` -> ``spec.containers[0].env``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def as_int(value: Any) -> int | None:
    """A literal count, else None (``"$NUM_NODES"``, ``"4+"``, booleans are unknown)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def env_value(value: Any) -> str | None:
    """How a literal YAML scalar reads once it is an environment variable."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


class FactSink:
    """Builds facts for one document, with positions taken from its marks."""

    def __init__(self, doc: Doc, path: str):
        self.doc, self.path, self.facts = doc, path, []

    def loc(self, at: tuple, line_offset: int | None = None) -> Location:
        line, col = self.doc.at(at)
        if line_offset is not None:
            # block scalar: its text starts on the line after the key / list dash
            return Location(self.path, line + 1 + line_offset, 1)
        return Location(self.path, line, col)

    def add(self, kind: str, value: Any, at: tuple, target: str, key: str | None = None,
            attrs: dict | None = None, line_offset: int | None = None) -> Fact:
        fact = Fact(kind, value, self.loc(at, line_offset), key if key is not None else dotted(at),
                    target, dict(attrs or {}))
        self.facts.append(fact)
        return fact


_SHELLS = {"sh", "bash", "zsh", "dash", "ash"}


@dataclass
class ScriptStep:
    """One statement of a shell script that sets environment variables or launches.

    ``offset`` is the line within the script (0-based); ``env`` maps names to
    values (None when not literal) with ``env_attrs`` per name; ``launch`` is a
    `launch` fact value and ``attrs`` its provenance (see
    ``gpulint.read.shell.scanner.launch_provenance``)."""

    offset: int
    env: dict = field(default_factory=dict)
    env_attrs: dict = field(default_factory=dict)
    launch: dict | None = None
    attrs: dict = field(default_factory=dict)


def launches_from_script(script: str, subst: dict[str, str] | None = None) -> list[ScriptStep]:
    """The steps of a shell script held in a YAML string (SkyPilot ``run:``, a
    container's ``sh -c``, a RayJob entrypoint, an Azure ML command), read by the
    shell reader's scanner like any script file.

    ``subst`` holds variables whose value the platform itself decides
    (``$SKYPILOT_NUM_GPUS_PER_NODE``); ``$0`` is not a file here.
    """
    from gpulint.read.shell.scanner import ShellScanner

    scanner = ShellScanner("", dict(subst or {}))
    try:
        facts = scanner.feed(script, 1, 1)
    except RecursionError:
        return []
    steps: list[ScriptStep] = []
    by_target: dict[str, ScriptStep] = {}  # a launch and the env its own command sets share a target
    for f in facts:
        if f.kind == "launch":
            step = by_target.get(f.target)
            if step is None:
                step = by_target[f.target] = ScriptStep(f.loc.line - 1)
                steps.append(step)
            step.offset = f.loc.line - 1
            step.launch, step.attrs = f.value, {k: v for k, v in f.attrs.items() if k != "flags"}
            continue
        if f.kind != "env":
            continue
        if f.target:
            step = by_target.get(f.target)
            if step is None:
                step = by_target[f.target] = ScriptStep(f.loc.line - 1)
                steps.append(step)
        elif steps and steps[-1].launch is None and not any(s is steps[-1] for s in by_target.values()) \
                and steps[-1].offset == f.loc.line - 1:
            step = steps[-1]  # `export A=1 B=2`: one statement, one step
        else:
            step = ScriptStep(f.loc.line - 1)
            steps.append(step)
        step.env[f.value["name"]] = f.value["value"]
        extra = {k: v for k, v in f.attrs.items() if k in ("overridable", "script_dir", "conditional")}
        if extra:
            step.env_attrs[f.value["name"]] = extra
    return steps


def launches_from_argv(argv: list) -> list[tuple[int | None, ScriptStep, bool]]:
    """Launches of an exec-form command (container command+args, Vertex containerSpec).

    Returns ``(index in argv of the script text or None, step, multi-line)``;
    ``sh -c "<script>"`` is read as a script.
    """
    if not argv or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in argv):
        return []
    argv = [str(a) for a in argv]
    prog = argv[0].rsplit("/", 1)[-1]
    if prog in _SHELLS:
        for i in range(1, min(len(argv), 4)):
            if argv[i].startswith("-") and "c" in argv[i][1:] and not argv[i].startswith("--"):
                if i + 1 < len(argv):
                    script = argv[i + 1]
                    return [(i + 1, st, "\n" in script) for st in launches_from_script(script)]
                return []
    from gpulint.read.shell.commands import Word
    from gpulint.read.shell.scanner import ShellScanner

    facts = ShellScanner("").feed_words([Word.of(a) for a in argv])
    return [(None, ScriptStep(0, launch=f.value, attrs={k: v for k, v in f.attrs.items() if k != "flags"}), False)
            for f in facts if f.kind == "launch"]


# --------------------------------------------------------------------------- labels and resources

_INSTANCE_KEYS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
# GKE's accelerator labels, and the GPU product label NVIDIA GPU Feature Discovery puts on every GPU node (the
# device's name with dashes: "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "Tesla-T4")
_ACCEL_KEYS = ("cloud.google.com/gke-accelerator", "cloud.google.com/gke-tpu-accelerator", "nvidia.com/gpu.product")
_GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
_ACCEL_RESOURCES = _GPU_RESOURCES + ("google.com/tpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore",
                                     "aws.amazon.com/neurondevice", "habana.ai/gaudi", "vpc.amazonaws.com/efa")
_EFA = "vpc.amazonaws.com/efa"
_OTHER_ACCELERATORS = ("google.com/tpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice",
                       "habana.ai/gaudi")
_HYPERPOD = "sagemaker.amazonaws.com/"  # node labels of SageMaker HyperPod clusters
_PROVIDER_PREFIXES = (
    ("eks.amazonaws.com/", "aws"), ("karpenter.k8s.aws/", "aws"), ("k8s.amazonaws.com/", "aws"),
    (_HYPERPOD, "aws"), ("karpenter.sagemaker.amazonaws.com/", "aws"),
    ("vpc.amazonaws.com/", "aws"), ("alpha.eksctl.io/", "aws"),
    ("cloud.google.com/", "gcp"), ("karpenter.azure.com/", "azure"), ("kubernetes.azure.com/", "azure"),
)


def _capacity(key: str, value: Any) -> str | None:
    """Capacity type a node label/taint value selects, or None when it does not say."""
    v = str(value).strip().lower() if isinstance(value, (str, bool)) else ""
    if key == "karpenter.sh/capacity-type":
        return {"spot": "spot", "on-demand": "on-demand"}.get(v)
    if key == "eks.amazonaws.com/capacitytype":
        return {"spot": "spot", "on_demand": "on-demand"}.get(v)
    if key in ("cloud.google.com/gke-spot", "cloud.google.com/gke-preemptible"):
        return "spot" if v == "true" else None
    if key == "kubernetes.azure.com/scalesetpriority":
        return "spot" if v == "spot" else None
    return None


_CAPACITY_KEYS = ("karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType", "cloud.google.com/gke-spot",
                  "cloud.google.com/gke-preemptible", "kubernetes.azure.com/scalesetpriority")


def _provider(keys: Iterable[str]) -> str | None:
    found = set()
    for key in keys:
        for prefix, prov in _PROVIDER_PREFIXES:
            if isinstance(key, str) and key.startswith(prefix):
                found.add(prov)
    return found.pop() if len(found) == 1 else None


# --------------------------------------------------------------------------- workloads


@dataclass
class _Workload:
    target: str
    resource: str
    pod: tuple                      # path of the PodSpec
    anchor: tuple                   # where the compute.target fact points
    role: str | None
    nodes: int | None = None
    nodes_at: tuple | None = None
    min_nodes: int | None = None
    min_at: tuple | None = None
    attrs: dict = field(default_factory=dict)
    launch_target: str | None = None  # MPIJob Launcher: its mpirun runs on the Workers
    compute: bool = True
    entrypoint: tuple | None = None   # RayJob entrypoint string path
    entry_target: str | None = None   # where the entrypoint's work runs (a RayJob's one accelerated worker group)
    entry_attrs: dict = field(default_factory=dict)
    limit_at: tuple | None = None     # a Job's activeDeadlineSeconds: how long one run may last
    schedule_at: tuple | None = None  # a CronJob's schedule: how often it runs


_TRAINING = "training"
_SERVING_HINTS = ("vllm", "text-generation-inference", "tritonserver", "torchserve", "sglang", "lmdeploy",
                  "tensorrt-llm", "trtllm", "ollama", "kserve", "llama.cpp", "tgi-", "/tgi", "uvicorn", "gunicorn",
                  "fastapi", "litserve", "ray serve", "bentoml")
_NOTEBOOK_HINTS = ("jupyter", "notebook")


def looks_like_kubernetes(doc: Doc) -> bool:
    data = doc.data
    return (isinstance(data, dict) and isinstance(data.get("apiVersion"), str)
            and isinstance(data.get("kind"), str))


def read_kubernetes(docs: list[Doc], path: str) -> list[Fact]:
    facts: list[Fact] = []
    used: set[str] = set()
    for doc in docs:
        if not looks_like_kubernetes(doc):
            continue
        if doc.data["kind"] == "List":
            for i, item in enumerate(as_list(doc.data.get("items"))):
                if isinstance(item, dict) and isinstance(item.get("kind"), str):
                    facts += _read_object(doc, ("items", i), path, used)
        else:
            facts += _read_object(doc, (), path, used)
    return facts + _autoscalers(docs, path, used)


#: objects that scale a Deployment's replicas between bounds: the HPA, and KEDA's ScaledObject
_AUTOSCALERS = {"HorizontalPodAutoscaler": ("minReplicas", "maxReplicas", 1),
                "ScaledObject": ("minReplicaCount", "maxReplicaCount", 0)}


def _autoscalers(docs: list[Doc], path: str, used: set) -> list[Fact]:
    """The floor an autoscaler of the same file keeps under a workload it targets (``scaleTargetRef``), as that
    workload's ``compute.min_nodes`` with the autoscaler and its ceiling in attrs."""
    out: list[Fact] = []
    for doc in docs:
        if not looks_like_kubernetes(doc) or doc.data.get("kind") not in _AUTOSCALERS:
            continue
        low, high, default = _AUTOSCALERS[doc.data["kind"]]
        ref = as_dict(doc.get(("spec", "scaleTargetRef")))
        target = f"{ref.get('kind') or 'Deployment'}/{ref.get('name')}"
        if target not in used:
            continue  # its target lives in another file: which workload it scales is not decided here
        spec = as_dict(doc.get(("spec",)))
        floor = as_int(spec.get(low, default))
        at = ("spec", low) if low in spec else ("spec",)
        sink = FactSink(doc, path)
        out.append(sink.add("compute.min_nodes", floor, at, target,
                            attrs={"autoscaler": doc.data["kind"], "max": as_int(spec.get(high))}))
    return out


def _name(doc: Doc, base: tuple) -> str:
    meta = as_dict(doc.get(base + ("metadata",)))
    name = meta.get("name") or meta.get("generateName")
    return str(name).rstrip("-") if isinstance(name, (str, int)) and str(name) else "unnamed"


def _read_object(doc: Doc, base: tuple, path: str, used: set) -> list[Fact]:
    kind = doc.get(base + ("kind",))
    api = str(doc.get(base + ("apiVersion",), ""))
    name = _name(doc, base)
    sink = FactSink(doc, path)
    if kind in ("NodePool", "Provisioner") and api.startswith("karpenter.sh/"):
        _read_nodepool(sink, base, kind, name, unique_target(f"{kind}/{name}", used))
        return sink.facts
    if kind == "TrainJob" and api.startswith("trainer.kubeflow.org/"):
        _read_trainjob(sink, base, name, unique_target(f"TrainJob/{name}", used))
        return sink.facts
    for wl in _workloads(doc, base, kind, name, used):
        _read_pod(sink, wl)
    return sink.facts


def unique_target(target: str, used: set) -> str:
    """``target``, or ``target#2``, ``target#3`` ... when a document of the file already took it (recorded in ``used``)."""
    out, n = target, 2
    while out in used:
        out, n = f"{target}#{n}", n + 1
    used.add(out)
    return out


def _deadline(doc: Doc, job_spec: tuple) -> tuple | None:
    """Where a Job's run-time limit is written: the Job's activeDeadlineSeconds, else its pod template's."""
    for at in (job_spec + ("activeDeadlineSeconds",), job_spec + ("template", "spec", "activeDeadlineSeconds")):
        v = as_int(doc.get(at))
        if v is not None and v > 0:
            return at
    return None


def _workloads(doc: Doc, base: tuple, kind: Any, name: str, used: set) -> list[_Workload]:
    spec = base + ("spec",)
    res = f"{kind}/{name}"
    meta_at = base + ("metadata", "name")
    out: list[_Workload] = []

    def one(pod, role, nodes_key, default_nodes=1):
        raw = doc.get(nodes_key) if nodes_key else None
        nodes = as_int(raw) if raw is not None else default_nodes
        out.append(_Workload(unique_target(res, used), res, pod, meta_at, role, nodes,
                             nodes_key if raw is not None else None))

    if kind == "Pod":
        one(spec, None, None)
    elif kind == "Job":
        one(spec + ("template", "spec"), _TRAINING, spec + ("parallelism",))
        out[-1].limit_at = _deadline(doc, spec)
    elif kind == "CronJob":
        jspec = spec + ("jobTemplate", "spec")
        one(jspec + ("template", "spec"), _TRAINING, jspec + ("parallelism",))
        out[-1].limit_at = _deadline(doc, jspec)
        if doc.get(spec + ("suspend",)) is not True and isinstance(doc.get(spec + ("schedule",)), str):
            out[-1].schedule_at = spec + ("schedule",)
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        one(spec + ("template", "spec"), None, spec + ("replicas",))
    elif kind == "JobSet":
        for i, rj in enumerate(as_list(doc.get(spec + ("replicatedJobs",)))):
            if not isinstance(rj, dict):
                continue
            rpath = spec + ("replicatedJobs", i)
            rname = rj.get("name") if isinstance(rj.get("name"), str) else str(i)
            reps = as_int(rj.get("replicas", 1))
            par = as_int(as_dict(as_dict(rj.get("template")).get("spec")).get("parallelism", 1))
            nodes = reps * par if reps is not None and par is not None else None
            at = rpath + ("replicas",) if "replicas" in rj else None
            out.append(_Workload(unique_target(f"{res}/{rname}", used), res, rpath + ("template", "spec", "template", "spec"),
                                 rpath, _TRAINING, nodes, at, attrs={"replicas": reps, "parallelism": par}))
    elif kind in ("RayJob", "RayCluster", "RayService") and _api(doc, base).startswith("ray.io/"):
        out += _ray_groups(doc, spec, kind, res, used)
    elif kind == "LeaderWorkerSet" and _api(doc, base).startswith("leaderworkerset.x-k8s.io/"):
        # replicas groups of `size` pods each: one leader (leaderTemplate, or workerTemplate when it has none) and
        # size - 1 workers; multi-node serving (vLLM/SGLang with tensor x pipeline parallelism across the group)
        lwt = spec + ("leaderWorkerTemplate",)
        groups, size = as_int(doc.get(spec + ("replicas",), 1)), as_int(doc.get(lwt + ("size",), 1))
        groups_at = spec + ("replicas",) if doc.get(spec + ("replicas",)) is not None else None
        workers = lwt + ("workerTemplate", "spec")
        if isinstance(doc.get(lwt + ("leaderTemplate",)), dict):
            out.append(_Workload(unique_target(f"{res}/leader", used), res, lwt + ("leaderTemplate", "spec"), lwt, None,
                                 groups, groups_at, attrs={"group_size": size}))
            n = groups * (size - 1) if groups is not None and size is not None else None
            if n != 0 and isinstance(doc.get(workers), dict):
                out.append(_Workload(unique_target(f"{res}/worker", used), res, workers, lwt, None, n, groups_at,
                                     attrs={"group_size": size}))
        elif isinstance(doc.get(workers), dict):
            n = groups * size if groups is not None and size is not None else None
            out.append(_Workload(unique_target(res, used), res, workers, lwt, None, n, groups_at, attrs={"group_size": size}))
    elif kind in ("ClusterTrainingRuntime", "TrainingRuntime") and _api(doc, base).startswith("trainer.kubeflow.org/"):
        out += _runtime_jobs(doc, spec, res, used)
    elif kind == "HyperPodPyTorchJob" and _api(doc, base).startswith("sagemaker.amazonaws.com/"):
        per_node = as_int(doc.get(spec + ("nprocPerNode",)))
        for i, rs in enumerate(as_list(doc.get(spec + ("replicaSpecs",)))):
            if not isinstance(rs, dict):
                continue
            rpath = spec + ("replicaSpecs", i)
            rname = rs.get("name") if isinstance(rs.get("name"), str) else str(i)
            raw = rs.get("replicas", 1)
            out.append(_Workload(unique_target(f"{res}/{rname}", used), res, rpath + ("template", "spec"), rpath, _TRAINING,
                                 as_int(raw), rpath + ("replicas",) if "replicas" in rs else None,
                                 attrs={"replica": rname, "nproc_per_node": per_node}))
    elif isinstance(kind, str) and "kubeflow.org" in _api(doc, base) and not _api(doc, base).startswith("trainer."):
        out += _operator_replicas(doc, spec, kind, res, used)
    return out


def _ray_groups(doc: Doc, spec: tuple, kind: str, res: str, used: set) -> list[_Workload]:
    """KubeRay: the head group and every worker group are targets of their own.

    A RayJob's entrypoint is a driver started beside the head, but the work it submits runs where its resources
    are: on the one worker group with accelerators, when there is exactly one. With several, which one runs it is
    decided by the job's task options, not here: the launch stays on the job with the groups it may run on."""
    cluster = spec + {"RayJob": ("rayClusterSpec",), "RayService": ("rayClusterConfig",)}.get(kind, ())
    role = _TRAINING if kind == "RayJob" else None
    autoscaling = doc.get(cluster + ("enableInTreeAutoscaling",)) is True
    out: list[_Workload] = []
    head = cluster + ("headGroupSpec",)
    head_wl = None
    if isinstance(doc.get(head), dict):
        head_wl = _Workload(unique_target(f"{res}/head", used), res, head + ("template", "spec"), head, role, 1, None)
        out.append(head_wl)
    accelerated = []
    for i, grp in enumerate(as_list(doc.get(cluster + ("workerGroupSpecs",)))):
        if not isinstance(grp, dict):
            continue
        gpath = cluster + ("workerGroupSpecs", i)
        gname = grp.get("groupName") if isinstance(grp.get("groupName"), str) else str(i)
        raw = grp.get("replicas", 1)
        wl = _Workload(unique_target(f"{res}/{gname}", used), res, gpath + ("template", "spec"), gpath, role,
                       as_int(raw), gpath + ("replicas",) if "replicas" in grp else None)
        for key, name in (("minReplicas", "min_replicas"), ("maxReplicas", "max_replicas")):
            if as_int(grp.get(key)) is not None:
                wl.attrs[name] = as_int(grp.get(key))
        if autoscaling:
            wl.attrs["autoscaling"] = True
            if "minReplicas" in grp:
                wl.min_nodes, wl.min_at = as_int(grp.get("minReplicas")), gpath + ("minReplicas",)
        elif kind in ("RayCluster", "RayService"):
            # only the autoscaler scales a group down to minReplicas; without it KubeRay keeps `replicas` pods
            # standing (a RayJob's cluster ends with the job)
            wl.min_nodes, wl.min_at = as_int(raw), gpath + (("replicas",) if "replicas" in grp else ())
        if _accelerated(doc, wl.pod):
            accelerated.append(wl.target)
        out.append(wl)
    entry = spec + ("entrypoint",)
    if kind == "RayJob" and isinstance(doc.get(entry), str) and out:
        holder = head_wl or out[0]
        holder.entrypoint = entry
        if len(accelerated) == 1:
            holder.entry_target = accelerated[0]
        elif accelerated:
            holder.entry_target = unique_target(res, used)
            holder.entry_attrs = {"runs_on_any_of": accelerated}
    return out


def _accelerated(doc: Doc, pod: tuple) -> bool:
    """Does a pod template request an accelerator (GPU, TPU, Neuron, Gaudi) or select accelerator nodes?"""
    for c in as_list(doc.get(pod + ("containers",))):
        if isinstance(c, dict) and [r for r in _resource((), c, _ACCEL_RESOURCES) if r[1] != _EFA]:
            return True
    return any(k in _ACCEL_KEYS for k in as_dict(doc.get(pod + ("nodeSelector",))))


def _api(doc: Doc, base: tuple) -> str:
    return str(doc.get(base + ("apiVersion",), ""))


def _runtime_jobs(doc: Doc, spec: tuple, res: str, used: set) -> list[_Workload]:
    """Kubeflow Trainer runtimes: a JobSet template whose trainer job ("node") runs
    ``mlPolicy.numNodes`` nodes."""
    out = []
    nodes_at = spec + ("mlPolicy", "numNodes")
    num_nodes = doc.get(nodes_at)
    for i, rj in enumerate(as_list(doc.get(spec + ("template", "spec", "replicatedJobs")))):
        if not isinstance(rj, dict):
            continue
        rpath = spec + ("template", "spec", "replicatedJobs", i)
        rname = rj.get("name") if isinstance(rj.get("name"), str) else str(i)
        trainer = rname == "node"
        nodes = (as_int(num_nodes) if num_nodes is not None else 1) if trainer else as_int(rj.get("replicas", 1))
        at = nodes_at if trainer and num_nodes is not None else (rpath + ("replicas",) if "replicas" in rj else None)
        out.append(_Workload(unique_target(f"{res}/{rname}", used), res, rpath + ("template", "spec", "template", "spec"),
                             rpath, _TRAINING, nodes, at, attrs={"replicated_job": rname}))
    return out


def _operator_replicas(doc: Doc, spec: tuple, kind: str, res: str, used: set) -> list[_Workload]:
    """Kubeflow training-operator jobs: every ``*ReplicaSpecs`` entry is a replica target."""
    out: list[_Workload] = []
    for skey, specs in as_dict(doc.get(spec)).items():
        if not (isinstance(skey, str) and skey.endswith("ReplicaSpecs") and isinstance(specs, dict)):
            continue
        reps = {r: as_int(as_dict(s).get("replicas", 1)) for r, s in specs.items() if isinstance(s, dict)}
        # torchrun's world spans Master + Worker, so both report the job's node total
        total = None
        if kind == "PyTorchJob" and all(reps.get(r, 0) is not None for r in ("Master", "Worker")):
            total = sum(reps.get(r, 0) or 0 for r in ("Master", "Worker"))
        worker_target = f"{res}/Worker"
        for rname, rspec in specs.items():
            if not isinstance(rspec, dict):
                continue
            rpath = spec + (skey, rname)
            own = reps.get(rname)
            nodes = total if kind == "PyTorchJob" and rname in ("Master", "Worker") else own
            wl = _Workload(unique_target(f"{res}/{rname}", used), res, rpath + ("template", "spec"), rpath, _TRAINING,
                           nodes, rpath + ("replicas",) if "replicas" in rspec else None,
                           attrs={"replica": rname, "replicas": own})
            restart = rspec.get("restartPolicy")
            if isinstance(restart, str):
                wl.attrs["restart_policy"] = restart
            if kind == "MPIJob" and rname == "Launcher":
                wl.compute, wl.launch_target = False, worker_target
            elastic = doc.get(spec + ("elasticPolicy",))
            if isinstance(elastic, dict) and rname == "Worker":
                wl.attrs["elastic"] = {k: elastic.get(k) for k in ("minReplicas", "maxReplicas", "maxRestarts")
                                       if isinstance(elastic.get(k), (int, str))}
                if "minReplicas" in elastic:
                    wl.min_nodes = as_int(elastic.get("minReplicas"))
                    wl.min_at = spec + ("elasticPolicy", "minReplicas")
            out.append(wl)
    return out


# --------------------------------------------------------------------------- pod templates


def _containers(sink: FactSink, pod: tuple) -> list[tuple[tuple, dict]]:
    return [(pod + ("containers", i), c) for i, c in enumerate(as_list(sink.doc.get(pod + ("containers",))))
            if isinstance(c, dict)]


def _resource(cpath: tuple, c: dict, names: tuple, key: str = "resources") -> list[tuple[tuple, str, Any]]:
    """(path, resource name, amount) per requested resource of ``names``; limits win over requests."""
    out = []
    res = as_dict(c.get(key))
    for name in names:
        for section in ("limits", "requests"):
            sec = as_dict(res.get(section))
            if name in sec:
                out.append((cpath + (key, section, name), name, sec[name]))
                break
    return out


def _selections(sink: FactSink, pod: tuple) -> list[tuple[tuple, str, Any, bool]]:
    """``(path, label key, value, only_choice)`` from nodeSelector and required node affinity."""
    out = []
    for key, value in as_dict(sink.doc.get(pod + ("nodeSelector",))).items():
        if isinstance(key, str):
            out.append((pod + ("nodeSelector", key), key, value, True))
    req = pod + ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    for t, term in enumerate(as_list(sink.doc.get(req))):
        for e, expr in enumerate(as_list(as_dict(term).get("matchExpressions"))):
            expr = as_dict(expr)
            if expr.get("operator") != "In" or not isinstance(expr.get("key"), str):
                continue
            values = [v for v in as_list(expr.get("values")) if isinstance(v, (str, int, bool))]
            for v, value in enumerate(values):
                out.append((req + (t, "matchExpressions", e, "values", v), expr["key"], value, len(values) == 1))
    return out


def _image_name(image: str) -> str:
    """An image without its tag or digest: ``verlai/verl:vllm0.9-cu124`` is verl's image, which ships vLLM for its
    rollouts; the name, not the tag, says what the container is (``vllm/vllm-openai:latest``)."""
    image = image.split("@", 1)[0]
    head, sep, tag = image.rpartition(":")
    return head if sep and "/" not in tag else image


def _role(sink: FactSink, wl: _Workload, containers) -> str | None:
    if wl.role:
        return wl.role
    words, images = [], []
    for _, c in containers:
        words.append(_image_name(str(c.get("image", ""))))
        images.append(str(c.get("image", "")))
        words += [str(a) for a in as_list(c.get("command"))[:3] + as_list(c.get("args"))[:3]]
    text = " ".join(words).lower()
    if any(h in text for h in _SERVING_HINTS) or re.search(r"\bserve\b", text):
        return "serving"
    # a notebook image's variant is often its tag (tensorflow/tensorflow:latest-gpu-jupyter): tags count here
    if any(h in (text + " " + " ".join(images).lower()) for h in _NOTEBOOK_HINTS):
        return "notebook"
    return None


def _read_pod(sink: FactSink, wl: _Workload) -> None:
    doc, target = sink.doc, wl.target
    containers = _containers(sink, wl.pod)
    gpu_reqs = [r for cp, c in containers for r in _resource(cp, c, _GPU_RESOURCES)]
    accel_reqs = [r for cp, c in containers for r in _resource(cp, c, _ACCEL_RESOURCES)]
    selections = _selections(sink, wl.pod)
    tolerations = _tolerations(sink, wl.pod)
    _compute(sink, wl, containers, gpu_reqs, accel_reqs, selections, tolerations)

    # env and launch facts: for every container, GPU or not
    launch_target = wl.launch_target or target
    for cpath, c in containers:
        cname = c.get("name") if isinstance(c.get("name"), str) else None
        _container_env(sink, cpath, c, launch_target, cname)
        _container_launches(sink, cpath, c, launch_target, cname)
        _served_model(sink, cpath, c, launch_target)
    if wl.entrypoint:
        script = doc.get(wl.entrypoint)
        multi = "\n" in script
        for n, step in enumerate(launches_from_script(script)):
            _emit_step(sink, wl.entrypoint, step.offset if multi else None, step, wl.entry_target or launch_target,
                       dotted(wl.entrypoint) + f"[{n}]", wl.entry_attrs)


def _tolerations(sink: FactSink, pod: tuple) -> list[tuple[tuple, dict]]:
    return [(pod + ("tolerations", i), t) for i, t in enumerate(as_list(sink.doc.get(pod + ("tolerations",))))
            if isinstance(t, dict)]


def _compute(sink: FactSink, wl: _Workload, containers, gpu_reqs, accel_reqs, selections, tolerations) -> None:
    """The compute.* facts of one workload, when it shows an accelerator signal."""
    signal = accel_reqs or any(k in _INSTANCE_KEYS + _ACCEL_KEYS for _, k, _, _ in selections)
    if not (wl.compute and signal):
        return
    keys = [k for _, k, _, _ in selections] + [t.get("key") for _, t in tolerations] + [n for _, n, _ in accel_reqs]
    tattrs = dict(wl.attrs)
    for _, k, v, _ in selections:
        if k == "cloud.google.com/machine-family":
            tattrs["machine_family"] = v
        if k in _INSTANCE_KEYS and isinstance(v, str) and v.startswith("ml."):
            keys.append(_HYPERPOD)  # SageMaker HyperPod nodes carry their ml.* instance type
    if any(isinstance(k, str) and k.startswith(_HYPERPOD) for k in keys):
        tattrs["hyperpod"] = True
    # what places the pod on a node group of the repository's cluster definitions (gpulint.link.placement)
    selector = {k: str(v) for _, k, v, only in selections if only and isinstance(v, (str, int, bool))}
    if selector:
        tattrs["node_selector"] = selector
    tols = [{k: t.get(k) for k in ("key", "operator", "value", "effect") if t.get(k) is not None} for _, t in tolerations]
    if tols:
        tattrs["tolerations"] = tols
    sink.add("compute.target", {"source": "kubernetes", "provider": _provider(keys), "resource": wl.resource,
                                "role": _role(sink, wl, containers)}, wl.anchor, wl.target, attrs=tattrs)
    _pod_compute(sink, wl, gpu_reqs, accel_reqs, selections, tolerations)


def _container_env(sink: FactSink, cpath: tuple, c: dict, target: str, cname: str | None) -> None:
    for i, item in enumerate(as_list(c.get("env"))):
        item = as_dict(item)
        if not isinstance(item.get("name"), str):
            continue
        value = None if "valueFrom" in item else env_value(item.get("value"))
        sink.add("env", {"name": item["name"], "value": value}, cpath + ("env", i), target,
                 key=dotted(cpath + ("env", item["name"])), attrs={"container": cname})


_EXEC_PROGRAMS = {"python", "python3", "torchrun", "accelerate", "deepspeed", "mpirun", "srun", "bash", "sh"} | \
    {p for t in TRAINERS for p, _ in t.cli}  # axolotl, llamafactory-cli, tune: packaged trainers (gpulint.read.packaged)


def _container_launches(sink: FactSink, cpath: tuple, c: dict, target: str, cname: str | None) -> None:
    command, args = c.get("command"), c.get("args")
    command = command if isinstance(command, list) else None
    args = args if isinstance(args, list) else []
    if command is None:
        # args alone feed the image's ENTRYPOINT, unknown here, unless they clearly are a program
        first = str(args[0]).rsplit("/", 1)[-1] if args else ""
        if not re.sub(r"[\d.]+$", "", first) in _EXEC_PROGRAMS:
            return
        argv, parts = args, [("args", j) for j in range(len(args))]
        anchor = cpath + ("args",)
    else:
        argv = command + args
        parts = [("command", j) for j in range(len(command))] + [("args", j) for j in range(len(args))]
        anchor = cpath + ("command",)
    for n, (idx, step, multi) in enumerate(launches_from_argv(argv)):
        at = cpath + parts[idx] if idx is not None else anchor
        key = dotted(anchor) + (f"[{n}]" if idx is not None else "")
        _emit_step(sink, at, step.offset if multi else None, step, target, key, {"container": cname})


#: flags that name the model of a model server (vLLM, TGI, SGLang, LMDeploy, Triton's vLLM backend ...)
_MODEL_FLAGS = ("--model", "--model-id", "--model_id", "--model-path", "--model_path")


def _served_model(sink: FactSink, cpath: tuple, c: dict, target: str) -> None:
    """``model.name`` from a model server's command line (``--model meta-llama/...``, ``vllm serve NAME``),
    whether the image's entrypoint or the container's command runs it."""
    words = [("command", i, w) for i, w in enumerate(as_list(c.get("command")))] + \
            [("args", i, w) for i, w in enumerate(as_list(c.get("args")))]
    flat = [(part, i, w) for part, i, w in words if isinstance(w, str)]
    for n, (part, i, w) in enumerate(flat):
        flag, eq, val = w.partition("=")
        at = None
        if flag in _MODEL_FLAGS:
            if eq:
                at = (part, i)
            elif n + 1 < len(flat):
                val, at = flat[n + 1][2], (flat[n + 1][0], flat[n + 1][1])
        elif w == "serve" and n > 0 and flat[n - 1][2].rsplit("/", 1)[-1] in ("vllm", "sglang") and n + 1 < len(flat):
            val, at = flat[n + 1][2], (flat[n + 1][0], flat[n + 1][1])
        if at is not None and val and not val.startswith(("-", "$")):
            sink.add("model.name", val, cpath + at, target)
            return


def shell_value(value: Any) -> str | None:
    """A value assigned in a shell line; None when it still needs expansion (``$X``, backticks)."""
    return value if isinstance(value, str) and "$" not in value and "`" not in value else None


def emit_step(sink: "FactSink", at: tuple, off: int | None, step: ScriptStep, target: str, key: str,
              attrs: dict) -> None:
    """The env and launch facts of one script step, at ``at`` (``off`` lines into a block scalar)."""
    for name, value in step.env.items():
        sink.add("env", {"name": name, "value": shell_value(value)}, at, target, key=f"{key}.env.{name}",
                 attrs={**attrs, **step.env_attrs.get(name, {})}, line_offset=off)
    if step.launch:
        sink.add("launch", step.launch, at, target, key=key, attrs={**attrs, **step.attrs}, line_offset=off)


_emit_step = emit_step


def _pod_compute(sink: FactSink, wl: _Workload, gpu_reqs, accel_reqs, selections, tolerations) -> None:
    target = wl.target
    for at, key, value, only in selections:
        attrs = {} if only else {"alternatives": True}
        if key in _INSTANCE_KEYS and isinstance(value, str):
            sink.add("compute.instance_type", value, at, target, attrs=attrs)
        elif key in _ACCEL_KEYS and isinstance(value, str):
            sink.add("compute.accelerator", {"type": value, "count": None}, at, target, attrs=attrs)
    if not gpu_reqs and not any(key in _ACCEL_KEYS for _, key, _, _ in selections):
        # a TPU / Neuron / Gaudi device-plugin request: an accelerator of its own, not a CPU pod
        for at, name, v in accel_reqs:
            if name in _OTHER_ACCELERATORS:
                sink.add("compute.accelerator", {"type": name, "count": as_int(v)}, at, target)
                break
    capacity = [(at, _capacity(key.lower(), value), only) for at, key, value, only in selections
                if key in _CAPACITY_KEYS and _capacity(key.lower(), value)]
    for at, cap, only in capacity:
        sink.add("compute.capacity", cap, at, target, attrs={} if only else {"alternatives": True})
    if not capacity:
        # tolerating a spot taint means the pod is meant for spot nodes (it may also land elsewhere)
        for at, t in tolerations:
            key = t.get("key")
            if key in _CAPACITY_KEYS:
                if t.get("operator") == "Exists":
                    # only GKE and AKS taint spot nodes alone; a capacity-type Exists says nothing
                    val = {"kubernetes.azure.com/scalesetpriority": "spot"}.get(key, "true" if "google" in key else "")
                else:
                    val = t.get("value")
                cap = _capacity(key.lower(), val)
                if cap == "spot":
                    sink.add("compute.capacity", cap, at, target, key=dotted(wl.pod + ("tolerations", key)),
                             attrs={"via": "toleration"})
                    break
    if wl.nodes_at is not None or wl.nodes is not None:
        sink.add("compute.node_count", wl.nodes, wl.nodes_at or wl.anchor, target)
    if wl.min_at is not None:
        sink.add("compute.min_nodes", wl.min_nodes, wl.min_at, target)
    if wl.limit_at is not None:
        sink.add("compute.time_limit", round(as_int(sink.doc.get(wl.limit_at)) / 3600, 4), wl.limit_at, target)
    if wl.schedule_at is not None:
        runs = runs_per_month(sink.doc.get(wl.schedule_at))
        if runs is not None:
            sink.add("compute.runs_per_month", runs, wl.schedule_at, target)
    if gpu_reqs:
        amounts = [as_int(v) for _, _, v in gpu_reqs]
        total = None if any(a is None for a in amounts) else sum(amounts)
        sink.add("compute.gpus_per_node", total, gpu_reqs[0][0], target)
    efa = [(at, v) for at, n, v in accel_reqs if n == _EFA]
    if efa:
        amounts = [as_int(v) for _, v in efa]
        sink.add("compute.efa", None if None in amounts else sum(amounts), efa[0][0], target)
    elif gpu_reqs:
        sink.add("compute.efa", 0, gpu_reqs[0][0], target, key=dotted(gpu_reqs[0][0][:-1] + (_EFA,)),
                 attrs={"absent": True})


# --------------------------------------------------------------------------- Kubeflow Trainer TrainJob


def _trainjob_pods(doc: Doc, spec: tuple) -> list[tuple]:
    """PodSpec-shaped overrides of the trainer's pods: runtimePatches (current API),
    podTemplateOverrides and podSpecOverrides (earlier v2 releases)."""
    out = []
    for i, patch in enumerate(as_list(doc.get(spec + ("runtimePatches",)))):
        jobs = spec + ("runtimePatches", i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")
        for j, rj in enumerate(as_list(doc.get(jobs))):
            if isinstance(rj, dict) and rj.get("name") in ("node", None):
                out.append(jobs + (j, "template", "spec", "template", "spec"))
    for key, inner in (("podTemplateOverrides", ("spec",)), ("podSpecOverrides", ())):
        for i, over in enumerate(as_list(doc.get(spec + (key,)))):
            names = [as_dict(t).get("name") for t in as_list(as_dict(over).get("targetJobs"))]
            if isinstance(over, dict) and (not names or "node" in names or "trainer" in names):
                out.append(spec + (key, i) + inner)
    return out


def _read_trainjob(sink: FactSink, base: tuple, name: str, target: str) -> None:
    """``TrainJob`` (trainer.kubeflow.org): ``spec.trainer`` holds the node count, the
    resources of each node, the image and command; the runtime it names
    (``runtimeRef``) supplies the rest, so its name is kept on the target."""
    doc = sink.doc
    spec = base + ("spec",)
    tp = spec + ("trainer",)
    trainer = as_dict(doc.get(tp))
    ref = as_dict(doc.get(spec + ("runtimeRef",)))
    attrs: dict = {}
    if isinstance(ref.get("name"), str):
        attrs["runtime_ref"] = {"kind": ref.get("kind") if isinstance(ref.get("kind"), str) else "ClusterTrainingRuntime",
                                "name": ref["name"]}
    per_node = trainer.get("numProcPerNode")
    if isinstance(per_node, (int, str)) and not isinstance(per_node, bool):
        attrs["num_proc_per_node"] = per_node
    raw = trainer.get("numNodes")
    wl = _Workload(target, f"TrainJob/{name}", spec, base + ("metadata", "name"), _TRAINING,
                   as_int(raw) if raw is not None else None, tp + ("numNodes",) if raw is not None else None,
                   attrs=attrs)
    gpu_reqs = _resource(tp, trainer, _GPU_RESOURCES, "resourcesPerNode")
    accel_reqs = _resource(tp, trainer, _ACCEL_RESOURCES, "resourcesPerNode")
    pods = _trainjob_pods(doc, spec)
    selections = [s for pod in pods for s in _selections(sink, pod)]
    tolerations = [t for pod in pods for t in _tolerations(sink, pod)]
    _compute(sink, wl, [(tp, trainer)], gpu_reqs, accel_reqs, selections, tolerations)
    _container_env(sink, tp, trainer, target, "node")
    _container_launches(sink, tp, trainer, target, "node")


# --------------------------------------------------------------------------- Karpenter


#: Karpenter's well-known requirement keys, on AWS (karpenter.k8s.aws/, and eks.amazonaws.com/ in EKS Auto Mode) and
#: Azure (karpenter.azure.com/): https://karpenter.sh/docs/concepts/scheduling/#well-known-labels,
#: https://docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html
_KARPENTER_NS = ("karpenter.k8s.aws/", "eks.amazonaws.com/", "karpenter.azure.com/")
_GPU_NAME_KEYS = tuple(ns + k for ns in _KARPENTER_NS for k in ("instance-gpu-name", "sku-gpu-name"))
#: instance categories whose every type carries GPUs (AWS: G and P; inf/trn are Neuron devices, not GPUs)
_GPU_CATEGORIES = {"g", "p"}


def _gpu_only(key: str, op: str, values: list) -> bool:
    """Does one requirement of a NodePool admit only GPU instances? A GPU label (manufacturer, count, memory) is on
    GPU instances only, so requiring it to exist or to be positive excludes every other type; so does a category or
    family list that holds only GPU ones."""
    ns = next((n for n in _KARPENTER_NS if key.startswith(n)), None)
    if ns is None:
        return False
    name, got = key[len(ns):], _ints(values)
    if name in ("instance-gpu-manufacturer", "instance-gpu-memory", "sku-gpu-manufacturer"):
        return op in ("In", "Exists") or (op == "Gt" and got is not None and min(got) >= 0)
    if name in ("instance-gpu-count", "sku-gpu-count"):
        return op == "Exists" or (got is not None and ((op == "Gt" and min(got) >= 0) or (op == "In" and min(got) > 0)))
    if name == "instance-category" and op == "In" and values:
        return {str(v).lower() for v in values} <= _GPU_CATEGORIES
    if name == "instance-family" and op == "In" and values:
        return all(looks_like_gpu_instance(f"{v}.xlarge") for v in values)
    return False


def _ints(values: list) -> list[int] | None:
    got = [as_int(v) for v in values]
    return [g for g in got if g is not None] if got and all(g is not None for g in got) else None


def _read_nodepool(sink: FactSink, base: tuple, kind: str, name: str, target: str) -> None:
    doc = sink.doc
    spec = base + ("spec",)
    reqs_at = spec + ("template", "spec", "requirements") if kind == "NodePool" else spec + ("requirements",)
    reqs = [(reqs_at + (i,), as_dict(r)) for i, r in enumerate(as_list(doc.get(reqs_at)))]
    keys = [r.get("key") for _, r in reqs]
    ref = as_dict(doc.get(spec + ("template", "spec", "nodeClassRef")))
    group = ref.get("group") if isinstance(ref.get("group"), str) else ""
    ref_kind = ref.get("kind") if isinstance(ref.get("kind"), str) else ""
    provider = _provider(keys + [group + "/"])
    if provider is None and ref_kind == "EC2NodeClass":
        provider = "aws"
    attrs = {}
    limits = as_dict(doc.get(spec + ("limits",)))
    if kind == "Provisioner":
        limits = as_dict(limits.get("resources")) or limits
    if limits:
        attrs["limits"] = {str(k): v for k, v in limits.items() if isinstance(v, (str, int, float))}
    # the nodes it launches carry the pool's template labels and karpenter.sh/nodepool, and its taints
    labels = {str(k): str(v) for k, v in as_dict(doc.get(spec + ("template", "metadata", "labels"))).items()
              if isinstance(v, (str, int, bool))}
    if kind == "NodePool":
        labels["karpenter.sh/nodepool"] = str(name)
    attrs.update(capacity_of="kubernetes", labels=labels)
    taints = [as_dict(t) for t in as_list(doc.get(spec + (("template", "spec", "taints") if kind == "NodePool" else ("taints",))))]
    if taints:
        attrs["taints"] = [{k: t.get(k) for k in ("key", "value", "effect") if t.get(k) is not None} for t in taints]
    sink.add("compute.target", {"source": "kubernetes", "provider": provider, "resource": f"{kind}/{name}",
                                "role": None}, base + ("metadata", "name"), target, attrs=attrs)
    for rpath, req in reqs:
        key, op = req.get("key"), req.get("operator")
        values = [v for v in as_list(req.get("values")) if isinstance(v, (str, int))]
        if key in _INSTANCE_KEYS and op == "In":
            for i, v in enumerate(values):
                sink.add("compute.instance_type", str(v), rpath + ("values", i), target,
                         attrs={"alternatives": True} if len(values) > 1 else {})
        elif key in _GPU_NAME_KEYS and op == "In":
            for i, v in enumerate(values):
                sink.add("compute.accelerator", {"type": str(v), "count": None}, rpath + ("values", i), target,
                         attrs={"alternatives": True} if len(values) > 1 else {})
        elif _gpu_only(str(key), str(op), values):
            shown = f"{key} {op}" + (f" [{', '.join(str(v) for v in values)}]" if values else "")
            sink.add("compute.gpu_only", shown, rpath, target)
        elif key == "karpenter.sh/capacity-type":
            allowed = {"spot", "on-demand", "reserved"}
            if op == "In":
                allowed = {str(v) for v in values}
            elif op == "NotIn":
                allowed -= {str(v) for v in values}
            elif op != "Exists":
                continue
            at = rpath + ("values",) if "values" in req else rpath
            if "spot" in allowed:
                # Karpenter launches spot first whenever a NodePool allows it
                sink.add("compute.capacity", "spot", at, target,
                         attrs={"on_demand_fallback": True} if len(allowed) > 1 else {})
            elif allowed == {"reserved"}:
                sink.add("compute.capacity", "reserved", at, target)  # only capacity reservations (Karpenter 1.3+)
            elif allowed & {"on-demand", "reserved"}:
                sink.add("compute.capacity", "on-demand", at, target)
