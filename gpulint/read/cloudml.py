"""Managed training job specs -> compute, env and launch facts.

* Azure ML CLI v2 YAML: command jobs (``$schema: .../commandJob.schema.json``),
  the command steps of pipeline jobs, and AmlCompute cluster definitions
  (``size``, ``tier: low_priority``).
* Vertex AI CustomJob specs as given to ``gcloud ai custom-jobs create --config``
  (``workerPoolSpecs`` at the top or under ``jobSpec``; camelCase or snake_case).

The VM behind a named Azure ML cluster (``compute: azureml:gpu-cluster``) is
defined elsewhere, so a command job alone has no instance type.
"""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact
from gpulint.read.kubernetes import (FactSink, as_dict, dotted, as_int, as_list, emit_step, env_value,
                                        launches_from_argv, launches_from_script, shell_value)
from gpulint.read.yamlnodes import Doc

# --------------------------------------------------------------------------- Azure ML


def _schema(data: dict) -> str:
    s = data.get("$schema")
    return s.lower() if isinstance(s, str) else ""


def looks_like_azureml(doc: Doc) -> bool:
    data = doc.data
    if not isinstance(data, dict) or "apiVersion" in data:
        return False
    if "azureml" in _schema(data):
        return True
    # no $schema: a command job still names its command and where it runs
    return data.get("type") == "command" and isinstance(data.get("command"), str) and (
        "compute" in data or "environment" in data)


def read_azureml(docs: list[Doc], path: str) -> list[Fact]:
    facts: list[Fact] = []
    for doc in docs:
        if not looks_like_azureml(doc):
            continue
        sink = FactSink(doc, path)
        data = doc.data
        kind = data.get("type")
        if kind == "amlcompute" or "amlcompute" in _schema(data):
            _aml_compute(sink, data)
        elif kind == "pipeline" or "pipelinejob" in _schema(data):
            for step, job in as_dict(data.get("jobs")).items():
                if isinstance(job, dict) and job.get("type", "command") == "command" and "command" in job:
                    _aml_command(sink, ("jobs", step), job, f"pipeline/{step}")
        elif kind in (None, "command") and "command" in data:
            name = data.get("name") or data.get("display_name") or "job"
            _aml_command(sink, (), data, f"command/{name}")
        facts += sink.facts
    return facts


def _aml_compute(sink: FactSink, data: dict) -> None:
    target = f"amlcompute/{data.get('name') or 'cluster'}"
    sink.add("compute.target", {"source": "azureml", "provider": "azure", "resource": target, "role": None},
             ("name",) if "name" in data else (), target)
    if isinstance(data.get("size"), str):
        sink.add("compute.instance_type", data["size"], ("size",), target)
    tier = data.get("tier")
    if isinstance(tier, str):
        cap = {"low_priority": "spot", "lowpriority": "spot", "dedicated": "on-demand"}.get(tier.lower())
        if cap:
            sink.add("compute.capacity", cap, ("tier",), target)
    if "max_instances" in data:
        sink.add("compute.node_count", as_int(data["max_instances"]), ("max_instances",), target)
    if "min_instances" in data:
        sink.add("compute.min_nodes", as_int(data["min_instances"]), ("min_instances",), target)


def _aml_command(sink: FactSink, base: tuple, job: dict, target: str) -> None:
    res = as_dict(job.get("resources"))
    dist = as_dict(job.get("distribution"))
    compute = job.get("compute")
    sink.add("compute.target", {"source": "azureml", "provider": "azure",
                                "resource": compute if isinstance(compute, str) else target,
                                "role": "training" if dist else None},
             base + (("compute",) if "compute" in job else ("command",)), target)
    nodes = as_int(res.get("instance_count", 1))
    if "instance_count" in res:
        sink.add("compute.node_count", nodes, base + ("resources", "instance_count"), target)
    if isinstance(res.get("instance_type"), str):
        sink.add("compute.instance_type", res["instance_type"], base + ("resources", "instance_type"), target)
    tier = as_dict(job.get("queue_settings")).get("job_tier")
    if isinstance(tier, str) and tier.lower() == "spot":
        sink.add("compute.capacity", "spot", base + ("queue_settings", "job_tier"), target)
    for key, value in as_dict(job.get("environment_variables")).items():
        if isinstance(key, str):
            sink.add("env", {"name": key, "value": env_value(value)}, base + ("environment_variables", key), target)

    # Azure ML starts process_count_per_instance copies of the command on each node itself
    per_node = as_int(dist.get("process_count_per_instance")) if dist.get("type") in ("pytorch", "mpi") else None
    command = job.get("command")
    if not isinstance(command, str):
        return
    multi = "\n" in command
    for n, step in enumerate(launches_from_script(command)):
        at = base + ("command",)
        off = step.offset if multi else None
        for name, value in step.env.items():
            sink.add("env", {"name": name, "value": shell_value(value)}, at, target, key=f"command[{n}].env.{name}",
                     attrs=step.env_attrs.get(name, {}), line_offset=off)
        launch = step.launch
        if not launch:
            continue
        attrs = dict(step.attrs)
        if dist:
            attrs["distribution"] = dist.get("type")
            if launch.get("tool") == "python":
                launch = dict(launch)
                if per_node is not None and launch.get("nproc_per_node") is None:
                    launch["nproc_per_node"] = per_node
                if nodes is not None and launch.get("nnodes") is None:
                    launch["nnodes"] = nodes
        sink.add("launch", launch, at, target, key=f"command[{n}]", attrs=attrs, line_offset=off)


# --------------------------------------------------------------------------- Vertex AI


def _pick(d: dict, camel: str) -> tuple[str | None, Any]:
    """The key actually used (camelCase or snake_case) and its value."""
    snake = "".join("_" + ch.lower() if ch.isupper() else ch for ch in camel)
    for key in (camel, snake):
        if key in d:
            return key, d[key]
    return None, None


def _pools_path(data: dict) -> tuple | None:
    key, _ = _pick(data, "workerPoolSpecs")
    if key:
        return (key,)
    jkey, job = _pick(data, "jobSpec")
    if isinstance(job, dict):
        key, _ = _pick(job, "workerPoolSpecs")
        if key:
            return (jkey, key)
    return None


def looks_like_vertex(doc: Doc) -> bool:
    data = doc.data
    return isinstance(data, dict) and "apiVersion" not in data and _pools_path(data) is not None


def read_vertex(docs: list[Doc], path: str) -> list[Fact]:
    facts: list[Fact] = []
    for doc in docs:
        if looks_like_vertex(doc):
            sink = FactSink(doc, path)
            _vertex_job(sink, doc.data, _pools_path(doc.data))
            facts += sink.facts
    return facts


def _vertex_job(sink: FactSink, data: dict, pools_at: tuple) -> None:
    _, name = _pick(data, "displayName")
    job_name = name if isinstance(name, str) else "CustomJob"
    pools = sink.doc.get(pools_at)
    # gcloud's --config also takes a single pool as a mapping
    indexed = [(pools_at + (i,), p) for i, p in enumerate(pools)] if isinstance(pools, list) else [(pools_at, pools)]
    indexed = [(p, as_dict(spec)) for p, spec in indexed]
    replicas = [(as_int(_pick(spec, "replicaCount")[1]) if _pick(spec, "replicaCount")[0] else 1) if spec else 0
                for _, spec in indexed]
    # pools 0 (chief) and 1 (workers) form one training world
    world = None if None in replicas[:2] else sum(replicas[:2])

    sched_at, strategy = None, None
    job_base = pools_at[:-1]
    jdata = as_dict(sink.doc.get(job_base)) if job_base else data
    skey, sched = _pick(jdata, "scheduling")
    if isinstance(sched, dict) and isinstance(sched.get("strategy"), str):
        sched_at, strategy = job_base + (skey, "strategy"), sched["strategy"].upper()

    for i, (ppath, spec) in enumerate(indexed):
        if not spec:
            continue
        target = f"{job_name}/pool{i}"
        mkey, machine = _pick(spec, "machineSpec")
        machine = as_dict(machine)
        sink.add("compute.target", {"source": "vertex", "provider": "gcp", "resource": job_name,
                                    "role": "training"}, ppath, target, attrs={"pool": i, "replicas": replicas[i]})
        tkey, mtype = _pick(machine, "machineType")
        if isinstance(mtype, str):
            sink.add("compute.instance_type", mtype, ppath + (mkey, tkey), target)
        akey, atype = _pick(machine, "acceleratorType")
        ckey, acount = _pick(machine, "acceleratorCount")
        if isinstance(atype, str) and atype != "ACCELERATOR_TYPE_UNSPECIFIED":
            count = as_int(acount) if ckey else None  # no documented default
            sink.add("compute.accelerator", {"type": atype, "count": count}, ppath + (mkey, akey), target)
            sink.add("compute.gpus_per_node", count, ppath + (mkey, ckey or akey), target)
        rkey, _ = _pick(spec, "replicaCount")
        nodes = world if i < 2 and len(indexed) > 1 else replicas[i]
        sink.add("compute.node_count", nodes, ppath + (rkey,) if rkey else ppath, target)
        if strategy == "SPOT":
            sink.add("compute.capacity", "spot", sched_at, target)
        elif strategy in ("STANDARD", "ON_DEMAND"):
            sink.add("compute.capacity", "on-demand", sched_at, target)
        _vertex_container(sink, ppath, spec, target)


def _vertex_container(sink: FactSink, ppath: tuple, spec: dict, target: str) -> None:
    ckey, container = _pick(spec, "containerSpec")
    pkey, package = _pick(spec, "pythonPackageSpec")
    if isinstance(container, dict):
        cpath, body = ppath + (ckey,), container
        command, args = container.get("command"), container.get("args")
        command = command if isinstance(command, list) else None
        args = args if isinstance(args, list) else []
        if command is not None:
            argv = command + args
            parts = [("command", j) for j in range(len(command))] + [("args", j) for j in range(len(args))]
        elif args and str(args[0]).rsplit("/", 1)[-1].rstrip("0123456789.") in ("python", "torchrun", "accelerate",
                                                                                   "deepspeed", "bash", "sh"):
            argv, parts = args, [("args", j) for j in range(len(args))]
        else:
            argv, parts = [], []
        anchor = cpath + (("command",) if command is not None else ("args",))
    elif isinstance(package, dict):
        cpath, body = ppath + (pkey, ), package
        _, module = _pick(package, "pythonModule")
        args = package.get("args") if isinstance(package.get("args"), list) else []
        argv = ["python", "-m", module] + args if isinstance(module, str) else []
        parts = [None, None, None] + [("args", j) for j in range(len(args))]
        anchor = cpath + (_pick(package, "pythonModule")[0] or "args",)
    else:
        return
    for i, item in enumerate(as_list(body.get("env"))):
        item = as_dict(item)
        if isinstance(item.get("name"), str):
            sink.add("env", {"name": item["name"], "value": env_value(item.get("value"))}, cpath + ("env", i), target,
                     key=dotted(cpath + ("env", item["name"])))
    for n, (idx, step, multi) in enumerate(launches_from_argv(argv)):
        part = parts[idx] if idx is not None and idx < len(parts) else None
        at = cpath + part if part else anchor
        key = dotted(anchor)
        if idx is not None:
            key += f"[{n}]"
        emit_step(sink, at, step.offset if multi else None, step, target, key, {})
