"""The house rules of the package layout, checked from the source with ``ast``.

Every import counts: module level, inside functions (lazy) and under
``if TYPE_CHECKING:`` (type-only), because each of them is a dependency a reader
has to hold in mind, and a cycle among them means two modules cannot be understood
(or moved) apart. The built-in rule packs are read as ``gpulint.rules`` (how they
ship). A package's ``__init__`` is a dependency only where it is imported by name.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"gpulint": ROOT / "gpulint", "gpulint.rules": ROOT / "rules"}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for prefix, base in PACKAGES.items():
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that ``name`` (a module or a name inside one) refers to."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


@lru_cache(maxsize=1)
def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from package import module`` depends on the module; the package's
                # own __init__ runs for any submodule import, so it is no edge.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                found = _resolve(target, modules)
                if found and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_cycle_lazy_and_type_only_included():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# -- stages: each imports only from the stages before it --------------------------------------
#: the pipeline's order (docs/architecture.md); a module may import from its own stage or an earlier one
STAGES = (
    ("gpulint", "gpulint.hookspecs", "gpulint.core"),
    ("gpulint.read",),
    ("gpulint.link",),
    ("gpulint.pricing",),
    ("gpulint.resolve",),
    ("gpulint.rule", "gpulint.rulekit", "gpulint.rules"),
    ("gpulint.run",),
    ("gpulint.testing", "gpulint.report"),
    ("gpulint.lsp",),
    ("gpulint.cli", "gpulint.__main__"),
)
#: the references to a later stage, each with its reason; nothing else may point forward
LATER_STAGE_ALLOWED = {
    ("gpulint.core.config", "gpulint.read.yamlnodes"): "a .gpulint.yaml is read with the YAML loader every reader uses",
    ("gpulint.core.config", "gpulint.pricing.overlay"): "loading a configuration attaches its price overlay",
    ("gpulint.core.config", "gpulint.run.plugins"): "type-only: rule options are validated against the plugin host",
    ("gpulint.core.sources", "gpulint.read.python.index"): "lazy: a source builds its line index on first use",
    ("gpulint.link.workloads", "gpulint.resolve.results"): "type-only: Workload.resolution, set by the resolver",
    ("gpulint.rule", "gpulint.run.context"): "type-only: the contexts a rule's check methods receive",
}


def _stage(module: str) -> int:
    best, rank = -1, None
    for i, prefixes in enumerate(STAGES):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{module} belongs to no stage of STAGES"
    return rank


def test_every_stage_imports_only_from_earlier_stages():
    forward = sorted((a, b) for a, bs in import_graph().items() for b in bs
                     if _stage(b) > _stage(a) and (a, b) not in LATER_STAGE_ALLOWED)
    assert forward == []


def test_the_allowed_forward_references_still_exist():
    graph = import_graph()
    assert [edge for edge in LATER_STAGE_ALLOWED if edge[1] not in graph.get(edge[0], ())] == []


def test_rule_packs_import_only_the_rulekit_facade():
    graph = import_graph()
    leaks = sorted((a, b) for a, bs in graph.items() if a.startswith("gpulint.rules")
                   for b in bs if not b.startswith(("gpulint.rules", "gpulint.rulekit")))
    assert leaks == []


def test_the_old_model_module_is_a_deprecated_alias():
    import importlib
    import sys

    import pytest

    sys.modules.pop("gpulint.model", None)
    with pytest.warns(DeprecationWarning, match="gpulint.rulekit"):
        old = importlib.import_module("gpulint.model")
    from gpulint.core import model

    assert old.Severity is model.Severity and old.Finding is model.Finding


def test_every_package_is_shipped():
    """pyproject.toml lists packages by name: a new subpackage missing there is absent from a wheel (pre-commit and
    `pip install .` users would run without it while the editable checkout works)."""
    import pytest

    tomllib = pytest.importorskip("tomllib")  # 3.11+; the layout is the same on 3.10
    listed = set(tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    pkg = Path(__file__).parent.parent / "gpulint"
    found = {"gpulint." + ".".join(p.parent.relative_to(pkg).parts) if p.parent != pkg else "gpulint"
             for p in pkg.rglob("__init__.py")}
    assert found | {"gpulint.rules"} == listed
