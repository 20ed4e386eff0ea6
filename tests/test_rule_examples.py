"""Every rule's VALID and INVALID examples, run through a real scan."""
import pytest

from gpulint.rule import doc_problems
from gpulint.testing import check_example, default_host

RULES = sorted(default_host().registry.rules.items())
CASES = [
    pytest.param(cls, ex, valid, id=f"{code}-{'valid' if valid else 'invalid'}-{i}")
    for code, cls in RULES
    for valid, examples in ((True, cls.VALID), (False, cls.INVALID))
    for i, ex in enumerate(examples)
]


@pytest.mark.parametrize("rule,example,valid", CASES)
def test_example(rule, example, valid, host):
    assert check_example(rule, example, valid, host) == []


@pytest.mark.parametrize("code,rule", RULES, ids=[c for c, _ in RULES])
def test_rule_is_documented(code, rule):
    assert doc_problems(rule) == []


@pytest.mark.parametrize("code,rule", [(c, r) for c, r in RULES if not c.startswith("SYS") or r.INVALID], ids=lambda x: x if isinstance(x, str) else "")
def test_rule_has_firing_and_silent_examples(code, rule):
    assert rule.INVALID, f"{code} has no INVALID example"
    if not code.startswith("SYS"):
        assert rule.VALID, f"{code} has no VALID example"
