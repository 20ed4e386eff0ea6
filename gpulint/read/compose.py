"""Docker Compose files -> compute, env and launch facts.

A service that reserves GPUs (``deploy.resources.reservations.devices`` with the ``gpu``
capability or the ``nvidia`` driver, the ``gpus:`` attribute, or the legacy
``runtime: nvidia``) is a compute target of one machine: the host the project runs on,
whose type Compose does not name. Its ``command``/``entrypoint`` is a launch (exec form or
a shell string, as a container's command in Kubernetes), its ``environment`` env facts.
Services without a GPU still carry their launches and env, as pods without one do.
"""
from __future__ import annotations

import posixpath
import re
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.kubernetes import (FactSink, _served_model, as_dict, as_int, as_list, emit_step, env_value,
                                        launches_from_argv, launches_from_script)
from gpulint.read.yamlnodes import Doc

#: the file names Compose itself looks for, and their usual variants (docker-compose.gpu.yml, compose.prod.yaml)
_COMPOSE_NAME = re.compile(r"^(docker-)?compose([.\-_][\w.\-]+)?\.ya?ml$", re.I)
#: images that serve a model (the service is serving capacity, not a training job)
_SERVER_IMAGES = re.compile(r"vllm|text-generation-inference|tritonserver|ollama|sglang|lmdeploy|tgi|nim|tensorrt-llm|"
                            r"localai|llama\.cpp|llamacpp", re.I)


def looks_like_compose(doc: Doc, path: str) -> bool:
    data = doc.data
    if not _COMPOSE_NAME.match(posixpath.basename(path)) or not isinstance(data, dict):
        return False
    services = data.get("services")
    return isinstance(services, dict) and any(isinstance(s, dict) for s in services.values())


def read_compose(docs: list[Doc], path: str) -> list[Fact]:
    facts: list[Fact] = []
    for doc in docs:
        for name, svc in as_dict(doc.data.get("services")).items():
            if isinstance(name, str) and isinstance(svc, dict):
                facts += _service(doc, path, name, svc)
    return facts


def _gpu_request(svc: dict, at: tuple) -> tuple[tuple, int | None] | None:
    """(where, GPU count or None for "all"/unstated) of the service's GPU reservation, or None."""
    devices = as_list(as_dict(as_dict(as_dict(svc.get("deploy")).get("resources")).get("reservations")).get("devices"))
    for i, d in enumerate(devices):
        if not isinstance(d, dict):
            continue
        caps = [str(c).lower() for c in as_list(d.get("capabilities"))]
        if "gpu" in caps or str(d.get("driver", "")).lower() == "nvidia":
            where = at + ("deploy", "resources", "reservations", "devices", i)
            if isinstance(d.get("device_ids"), list):
                return where, len(d["device_ids"])
            count = d.get("count")
            return where, (as_int(count) if str(count).lower() != "all" else None)
    gpus = svc.get("gpus")
    if gpus is not None:
        return at + ("gpus",), (None if str(gpus).lower() == "all" else as_int(gpus))
    if str(svc.get("runtime", "")).lower() == "nvidia":
        return at + ("runtime",), None
    return None


def _service(doc: Doc, path: str, name: str, svc: dict) -> list[Fact]:
    sink = FactSink(doc, path)
    at = ("services", name)
    target = f"service/{name}"
    gpu = _gpu_request(svc, at)
    if gpu is not None:
        where, count = gpu
        image = svc.get("image") if isinstance(svc.get("image"), str) else ""
        role = "serving" if _SERVER_IMAGES.search(image) else None
        sink.add("compute.target", {"source": "compose", "provider": None, "resource": target, "role": role}, at, target)
        # count "all" (or runtime: nvidia): every GPU of a host Compose does not describe
        sink.add("compute.gpus_per_node", count, where, target, attrs={} if count is not None else {"all": True})
    env = svc.get("environment")
    items = env.items() if isinstance(env, dict) else (
        (str(e).partition("=")[0], str(e).partition("=")[2] if "=" in str(e) else None) for e in as_list(env))
    for key, value in items:
        if isinstance(key, str) and key:
            sink.add("env", {"name": key, "value": None if value is None else env_value(value)}, at + ("environment", key),
                     target)
    _launches(sink, at, svc, target)
    entry, command = svc.get("entrypoint"), svc.get("command")
    if isinstance(command, list) and (entry is None or isinstance(entry, list)):
        # ``image: vllm/vllm-openai`` with ``command: ["--model", NAME]``: the image's server and its model
        _served_model(sink, at, {"command": command} if entry is None else {"command": entry, "args": command}, target)
    return sink.facts


def _launches(sink: FactSink, at: tuple, svc: dict, target: str) -> None:
    entry, command = svc.get("entrypoint"), svc.get("command")
    if isinstance(command, str) and entry is None:
        script = command
        multi = "\n" in script
        for n, step in enumerate(launches_from_script(script)):
            emit_step(sink, at + ("command",), step.offset if multi else None, step, target, f"{target}.command[{n}]", {})
        return
    argv: list[Any] = (as_list(entry) if not isinstance(entry, str) else entry.split()) + \
        (as_list(command) if not isinstance(command, str) else command.split())
    if not argv:
        return  # the image's own ENTRYPOINT/CMD, which the repository's Dockerfile (if any) says
    for n, (_, step, multi) in enumerate(launches_from_argv(argv)):
        emit_step(sink, at + ("command",) if command is not None else at + ("entrypoint",), step.offset if multi else None,
                  step, target, f"{target}.command[{n}]", {})
