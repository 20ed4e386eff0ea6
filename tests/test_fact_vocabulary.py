"""The fact vocabulary cannot drift: every fact every built-in extractor emits, over every
fixture repository and every rule example, has a registered kind and a value of its shape;
docs/facts.md is the registry's own rendering."""
from __future__ import annotations

import collections
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES, ROOT
from gpulint.core import facts
from gpulint.core.config import Config
from gpulint.run.engine import ScanRequest, Scanner
from gpulint.testing import default_host, write_tree


def _emitted(root: Path):
    scanner = Scanner(default_host(), Config())
    scanner.scan(ScanRequest(paths=[root], cache=False))  # a reused scan keeps no per-file facts
    for path, res in scanner.last_results.items():
        for f in res.facts:
            yield path, f


def _example_trees():
    for code, rule in sorted(default_host().registry.rules.items()):
        for i, ex in enumerate(list(rule.VALID) + list(rule.INVALID)):
            yield f"{code}-{i}", ex.file_map()


@pytest.fixture(scope="module")
def all_facts(tmp_path_factory):
    out = []
    for fixture in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        out += [(f"{fixture.name}/{path}", f) for path, f in _emitted(fixture)]
    for name, files in _example_trees():
        root = tmp_path_factory.mktemp(name)
        write_tree(root, files)
        out += [(f"{name}/{path}", f) for path, f in _emitted(root)]
    return out


def test_every_emitted_kind_is_registered(all_facts):
    unknown = collections.Counter(f.kind for _, f in all_facts if f.kind not in facts.KINDS)
    assert not unknown, f"kinds emitted but not in gpulint.core.facts.KINDS: {dict(unknown)}"


def test_every_emitted_value_has_its_registered_shape(all_facts):
    bad = []
    for where, f in all_facts:
        fk = facts.KINDS.get(f.kind)
        if fk is None:
            continue
        try:
            jsonschema.validate(f.value, fk.schema)
        except jsonschema.ValidationError as exc:
            bad.append(f"{where}:{f.loc.line} {f.kind}={f.value!r}: {exc.message}")
    assert not bad, "\n".join(bad[:20])


def test_targeted_kinds_carry_a_target(all_facts):
    missing = [f"{w} {f.kind}" for w, f in all_facts if facts.KINDS.get(f.kind) and facts.KINDS[f.kind].targeted and not f.target]
    assert not missing, missing[:10]


def test_the_fixtures_exercise_most_of_the_vocabulary(all_facts):
    """A registered kind nothing emits is documentation of nothing: at most the few that need inputs
    the fixtures do not hold may stay unseen."""
    seen = {f.kind for _, f in all_facts}
    unseen = sorted(set(facts.KINDS) - seen)
    assert len(unseen) <= 4, unseen


def test_docs_are_generated_from_the_registry():
    doc = (ROOT / "docs" / "facts.md").read_text(encoding="utf-8")
    assert doc == facts.document() + "\n", "docs/facts.md is stale: run `gpulint facts --format markdown > docs/facts.md`"


def test_register_refuses_an_unknown_family():
    with pytest.raises(ValueError, match="fact family"):
        facts.register("x.y", "nonsense", {}, "")
