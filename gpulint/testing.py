"""Helpers for testing rules (gpulint's own and plugins'): run a scan over a
small repository given as {path: text} and get its findings back."""
from __future__ import annotations

import tempfile
from pathlib import Path

from gpulint.core.config import Config, from_dict, load_config
from gpulint.run.engine import ScanRequest, Scanner
from gpulint.core.model import Finding
from gpulint.run.plugins import PluginHost
from gpulint.core.result import ScanResult
from gpulint.rule import Example, Rule

_HOST: PluginHost | None = None


def default_host() -> PluginHost:
    global _HOST
    if _HOST is None:
        _HOST = PluginHost()
    return _HOST


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def scan_tree(root: Path, host: PluginHost | None = None, select: list[str] | None = None, config: Config | None = None) -> tuple[ScanResult, list]:
    host = host or default_host()
    cfg = config or load_config(None, root)
    return Scanner(host, cfg).scan(ScanRequest(paths=[root], select=select, cache=False))  # a rule under test changes between runs


def scan_files(files: dict[str, str], host: PluginHost | None = None, select: list[str] | None = None, config_text: str = "") -> ScanResult:
    with tempfile.TemporaryDirectory(prefix="gpulint-test-") as tmp:
        root = Path(tmp)
        write_tree(root, files)
        if config_text:
            (root / ".gpulint.toml").write_text(config_text, encoding="utf-8")
        result, _ = scan_tree(root, host, select)
        return result


def run_example(rule: type[Rule], example: Example, host: PluginHost | None = None) -> list[Finding]:
    """Findings of `rule` (only) on an example repository."""
    # an example with its own config selects what it needs (SYS004 needs the code it names)
    result = scan_files(example.file_map(), host, select=None if example.config else [rule.code], config_text=example.config)
    return [f for f in result.findings if f.code == rule.code]


def check_example(rule: type[Rule], example: Example, valid: bool, host: PluginHost | None = None) -> list[str]:
    """Problems with an example: [] when the rule behaves as the example says."""
    found = run_example(rule, example, host)
    if valid:
        return [f"unexpected {f.code} at {f.loc.path}:{f.loc.line}: {f.message}" for f in found]
    problems = []
    remaining = list(found)
    for exp in example.expect:
        match = next((f for f in remaining if f.loc.path == exp.path and f.loc.line == exp.line
                      and all(s.lower() in f.message.lower() for s in exp.contains())), None)
        if match is None:
            problems.append(f"expected {rule.code} at {exp.path}:{exp.line} containing {exp.contains()}; got "
                            + "; ".join(f"{f.loc.path}:{f.loc.line}: {f.message}" for f in found) or "nothing")
        else:
            remaining.remove(match)
    problems += [f"unexpected extra {f.code} at {f.loc.path}:{f.loc.line}: {f.message}" for f in remaining]
    return problems


__all__ = ["check_example", "default_host", "run_example", "scan_files", "scan_tree", "write_tree", "from_dict"]


def resolve_by_hand(wl, compute: dict | None = None, model: dict | None = None):
    """Give a hand-made ``Workload`` a resolution, for unit tests of rule helpers.

    ``compute``: ``{"instance": "p4d.24xlarge", "nodes": 1, "gpus_per_node": 8, "capacity": "spot"}``
    (the instance is looked up in the bundled catalogue; ``None`` or a missing name leaves it
    unknown); ``model``: ``ModelInfo`` fields (``params``, ``name``, ``dims`` ...)."""
    from gpulint.pricing.catalogue import Catalogue
    from gpulint.core.model import Location
    from gpulint.resolve.precision import precision_view
    from gpulint.resolve.results import GPU, UNKNOWN, CheckpointInfo, ModelInfo, PrecisionInfo, ResolvedCompute, WorkloadResolution
    from gpulint.resolve.scale import tutorial_size, unsized_spend

    rc = None
    if compute is not None:
        cat = Catalogue.load()
        inst = cat.resolve(compute.get("instance")) if compute.get("instance") else None
        gpu = cat.gpu(inst)
        rc = ResolvedCompute(
            id="test#compute", path="test", target="compute", loc=Location("test"), source=compute.get("source"),
            provider=compute.get("provider") or (inst.provider if inst else None), resource=None, target_role=None,
            device=GPU if inst is not None or compute.get("gpus_per_node") else UNKNOWN, device_reason="by hand",
            instance=inst, architecture=gpu.architecture if gpu else None, instance_written=compute.get("instance"),
            gpus_per_node=compute.get("gpus_per_node", inst.gpu_count if inst else None), nodes=compute.get("nodes"),
            capacity=compute.get("capacity"))
    view = precision_view(wl)
    precision = PrecisionInfo(view, True if view.on else (False if view.decided_off else None), tuple(sorted(view.dtypes)), ())
    m = None
    if model is not None:
        m = ModelInfo(params=model.get("params"), evidence=model.get("evidence", "by hand"), name=model.get("name"),
                      dims=model.get("dims") or {}, load_in_4bit=bool(model.get("load_in_4bit")),
                      load_in_8bit=bool(model.get("load_in_8bit")))
    wl.resolution = WorkloadResolution(role="training", role_reason="by hand", compute=rc, job_computes=(rc,) if rc else (),
                                       model=m, precision=precision, checkpoint=CheckpointInfo(), tutorial=tutorial_size(wl, m),
                                       unsized=unsized_spend(wl, m, rc, None))
    return wl
