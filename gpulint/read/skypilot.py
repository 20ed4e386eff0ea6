"""SkyPilot task YAML -> compute, env, launch and storage facts.

One target per task document (``name:`` or ``task``). Whether the task runs as a
managed job (``sky jobs launch``) is decided on the command line, not in the
YAML, so nothing is said about it here. Values the CLI may override
(``--use-spot``, ``--env``) are read as written.
"""
from __future__ import annotations

import re
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.kubernetes import FactSink, as_dict, as_int, as_list, emit_step, env_value, launches_from_script
from gpulint.read.yamlnodes import Doc

_TASK_KEYS = ("resources", "run", "setup", "num_nodes", "file_mounts")
# keys that belong to other YAML dialects (k8s, Azure ML, dstack, CI, compose)
_FOREIGN_KEYS = ("apiVersion", "kind", "$schema", "type", "jobs", "on", "services", "steps", "commands", "stages")
_SKY_RESOURCE_KEYS = ("accelerators", "use_spot", "cloud", "infra", "instance_type", "any_of", "ordered",
                      "disk_tier", "image_id", "region", "zone", "network_tier", "job_recovery", "spot_recovery")
_PROVIDERS = {"aws": "aws", "gcp": "gcp", "azure": "azure"}
_BUCKET_RX = re.compile(r"^(s3|gs|r2|cos|oci|https?|az|azure|nebius)://", re.I)


def looks_like_skypilot(doc: Doc) -> bool:
    data = doc.data
    if not isinstance(data, dict) or any(k in data for k in _FOREIGN_KEYS):
        return False
    if isinstance(data.get("run"), str) or isinstance(data.get("setup"), str):
        return True
    if isinstance(data.get("file_mounts"), dict) or as_int(data.get("num_nodes")) is not None:
        return True
    res = data.get("resources")
    # Helm values also have `resources:` (limits/requests); SkyPilot's has its own keys
    return isinstance(res, dict) and any(k in res for k in _SKY_RESOURCE_KEYS) and not (
        "limits" in res or "requests" in res)


def read_skypilot(docs: list[Doc], path: str) -> list[Fact]:
    facts: list[Fact] = []
    used: set[str] = set()
    for doc in docs:
        if looks_like_skypilot(doc):
            facts += _read_task(doc, path, used)
    return facts


def parse_accelerator(text: Any, count: Any = None) -> dict | None:
    """``"A100:8"`` / (``"A100"``, 8) -> {"type", "count"}; a count absent means 1 in SkyPilot."""
    if not isinstance(text, str) or not text.strip():
        return None
    name, sep, num = text.strip().partition(":")
    if sep:
        count = num
    if count is None:
        return {"type": name.strip(), "count": 1}
    return {"type": name.strip(), "count": as_int(count)}


def _accelerators(value: Any, at: tuple) -> list[tuple[tuple, dict, bool]]:
    """``(path, accelerator, ordered)`` for each alternative the field allows."""
    if isinstance(value, str):
        acc = parse_accelerator(value)
        return [(at, acc, False)] if acc else []
    if isinstance(value, dict):  # {"A100": 8}, or a YAML set {A100:8, H100:8}
        out = [(at + (k,), parse_accelerator(k, v), False) for k, v in value.items()]
        return [o for o in out if o[1]]
    if isinstance(value, list):  # ordered preference
        out = [(at + (i,), parse_accelerator(v), True) for i, v in enumerate(value)]
        return [o for o in out if o[1]]
    return []


def _provider(res: dict) -> str | None:
    for key in ("infra", "cloud"):
        val = res.get(key)
        if isinstance(val, str) and val.strip():
            return _PROVIDERS.get(val.strip().split("/")[0].lower())
    return None


def _read_task(doc: Doc, path: str, used: set) -> list[Fact]:
    data = doc.data
    name = data.get("name") if isinstance(data.get("name"), (str, int)) else None
    target = str(name) if name is not None else "task"
    n = 2
    while target in used:
        target, n = f"{name or 'task'}#{n}", n + 1
    used.add(target)
    sink = FactSink(doc, path)
    res = as_dict(data.get("resources"))
    cands = [(("resources", k, i), as_dict(c), k) for k in ("any_of", "ordered")
             for i, c in enumerate(as_list(res.get(k)))]

    accels = _accelerators(res.get("accelerators"), ("resources", "accelerators"))
    cand_accels = [(p, a, o, i) for cpath, c, k in cands
                   for i, (p, a, o) in enumerate(_accelerators(c.get("accelerators"), cpath + ("accelerators",)))]
    instance = res.get("instance_type")
    cand_instances = [(cpath + ("instance_type",), c["instance_type"]) for cpath, c, _ in cands
                      if isinstance(c.get("instance_type"), str)]
    if accels or cand_accels or isinstance(instance, str) or cand_instances:
        providers = {_provider(c) for _, c, _ in cands} if cands else set()
        provider = _provider(res) or (providers.pop() if len(providers) == 1 else None)
        tattrs = {}
        infra = res.get("infra") or res.get("cloud")
        if isinstance(infra, str):
            tattrs["infra"] = infra
        sink.add("compute.target", {"source": "skypilot", "provider": provider, "resource": target,
                                    "role": "serving" if "service" in data else None},
                 ("resources",), target, attrs=tattrs)
        many = len(accels) + len(cand_accels) > 1
        for p, acc, ordered in accels:
            sink.add("compute.accelerator", acc, p, target,
                     attrs={"alternatives": True, "ordered": ordered} if many else {})
        for p, acc, ordered, _ in cand_accels:
            sink.add("compute.accelerator", acc, p, target, attrs={"alternatives": True, "ordered": ordered})
        counts = {a["count"] for _, a, _ in accels} | {a["count"] for _, a, _, _ in cand_accels}
        if len(counts) == 1 and (accels or cand_accels):
            first = (accels or cand_accels)[0][0]
            sink.add("compute.gpus_per_node", counts.pop(), first, target)
        if isinstance(instance, str):
            sink.add("compute.instance_type", instance, ("resources", "instance_type"), target,
                     attrs={"alternatives": True} if cand_instances else {})
        for p, inst in cand_instances:
            sink.add("compute.instance_type", inst, p, target, attrs={"alternatives": True})
        _capacity(sink, res, cands, target, as_dict(data.get("service")))
        service = as_dict(data.get("service"))
        replicas, where = _replicas(service)
        if replicas is not None:
            # a SkyServe service runs that many copies of the task, each on its own num_nodes (as a Deployment's replicas)
            nodes = as_int(data.get("num_nodes", 1))
            sink.add("compute.node_count", replicas * nodes if nodes is not None else None, where, target)
        elif "num_nodes" in data:
            sink.add("compute.node_count", as_int(data.get("num_nodes")), ("num_nodes",), target)

    for key, value in as_dict(data.get("envs")).items():
        if isinstance(key, str):
            sink.add("env", {"name": key, "value": None if value is None else env_value(value)}, ("envs", key), target)

    subst = _platform_vars(data, accels, cand_accels)
    for phase in ("setup", "run"):
        script = data.get(phase)
        if not isinstance(script, str):
            continue
        multi = "\n" in script
        for n, step in enumerate(launches_from_script(script, subst)):
            emit_step(sink, (phase,), step.offset if multi else None, step, target, f"{phase}[{n}]",
                      {"phase": phase})

    for mount, spec in as_dict(data.get("file_mounts")).items():
        value = file_mount(mount, spec)
        if value is not None:
            sink.add("storage.mount", value, ("file_mounts", mount), target)
    return sink.facts


def file_mount(path: Any, spec: Any) -> dict | None:
    """The ``storage.mount`` value of one ``file_mounts`` entry that holds a bucket (a SkyPilot task's, or a NeMo-Run
    SkypilotExecutor's): ``{name|source, mode}`` mounts it (MOUNT by default); a bucket URI as a plain value is copied
    onto the node, not mounted (COPY); a local folder is no bucket (None)."""
    if not isinstance(path, str):
        return None
    if isinstance(spec, dict):
        bucket = spec.get("name") or spec.get("source")
        mode = spec.get("mode") if isinstance(spec.get("mode"), str) else "MOUNT"
        return {"path": path, "bucket": bucket, "mode": mode.upper()} if isinstance(bucket, str) else None
    if isinstance(spec, str) and _BUCKET_RX.match(spec):
        return {"path": path, "bucket": spec, "mode": "COPY"}
    return None


def _replicas(service: dict) -> tuple[int | None, tuple]:
    """The replicas a SkyServe service always runs: ``replicas``, else ``replica_policy.min_replicas``."""
    if as_int(service.get("replicas")) is not None:
        return as_int(service.get("replicas")), ("service", "replicas")
    policy = as_dict(service.get("replica_policy"))
    if as_int(policy.get("min_replicas")) is not None:
        return as_int(policy.get("min_replicas")), ("service", "replica_policy", "min_replicas")
    return None, ()


def _capacity(sink: FactSink, res: dict, cands, target: str, service: dict | None = None) -> None:
    attrs = {}
    for key in ("job_recovery", "spot_recovery"):
        if isinstance(res.get(key), (str, dict)):
            attrs["job_recovery"] = res[key]
    policy = as_dict((service or {}).get("replica_policy"))
    if policy.get("dynamic_ondemand_fallback") is True or (as_int(policy.get("base_ondemand_fallback_replicas")) or 0) > 0:
        attrs["on_demand_fallback"] = True  # SkyServe keeps (or starts) on-demand replicas when spot ones go
    if isinstance(res.get("use_spot"), bool):
        sink.add("compute.capacity", "spot" if res["use_spot"] else "on-demand", ("resources", "use_spot"), target,
                 attrs=attrs)
    for cpath, c, _ in cands:
        if isinstance(c.get("use_spot"), bool):
            sink.add("compute.capacity", "spot" if c["use_spot"] else "on-demand", cpath + ("use_spot",), target,
                     attrs={**attrs, "alternatives": True})


def _platform_vars(data: dict, accels, cand_accels) -> dict[str, str]:
    """Variables SkyPilot sets itself, when the YAML decides them."""
    out = {}
    counts = {a["count"] for _, a, _ in accels} | {a["count"] for _, a, _, _ in cand_accels}
    if len(counts) == 1:
        count = counts.pop()
        if isinstance(count, int):
            out["SKYPILOT_NUM_GPUS_PER_NODE"] = str(count)
    nodes = as_int(data.get("num_nodes", 1))
    if nodes is not None:
        out["SKYPILOT_NUM_NODES"] = str(nodes)
    return out
