"""Every rule's own valid and invalid cases, run as tests (Fixit's habit)."""

import pytest

from trainlint.config import Settings, torch_at_least
from trainlint.diagnostics import Applicability
from trainlint.engine import ActiveRule, lint_text
from trainlint.fixer import fix_text
from trainlint.registry import all_rules
from trainlint.rule import NO_FIX, Invalid, Valid


def _cases(kind):
    for rule in all_rules():
        for i, case in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, case, id=f"{rule.code}-{kind}-{i}")


def _active(rule, case):
    options = {name: opt.default for name, opt in rule.options.items()}
    options.update(case.options)
    # A case may select other rules too (TL001 judges their suppressions); their options are the defaults.
    settings = Settings(**{"select": (rule.code,), **case.settings})
    # A rule whose finding does not exist in the case's target-torch is off, as in a real run.
    on = torch_at_least(settings.target_torch, rule.requires_torch)
    others = [r for r in settings.active_rules("case.py") if r.rule is not rule]
    return ([ActiveRule(rule, options)] if on else []) + others, settings


@pytest.mark.parametrize("rule,case", list(_cases("valid")))
def test_valid(rule, case: Valid):
    rules, settings = _active(rule, case)
    found = lint_text(case.code, "case.py", rules, settings)
    assert [d for d in found if d.code == rule.code] == [], case.code


@pytest.mark.parametrize("rule,case", list(_cases("invalid")))
def test_invalid(rule, case: Invalid):
    rules, settings = _active(rule, case)
    found = [d for d in lint_text(case.code, "case.py", rules, settings) if d.code == rule.code]
    assert found, f"{rule.code} did not fire on:\n{case.code}"
    if case.message:
        assert any(case.message in d.message for d in found)
    outcome = fix_text(case.code, "case.py", rules, settings, unsafe_fixes=True)
    fixed = outcome.text
    if case.fixed == NO_FIX:
        assert not [d for d in outcome.applied if d.code == rule.code], fixed
    elif case.fixed is not None:
        assert fixed == case.fixed
        # Idempotent: fixing the fixed text changes nothing more.
        assert fix_text(fixed, "case.py", rules, settings, unsafe_fixes=True).text == fixed


@pytest.mark.parametrize("rule,case", list(_cases("invalid")))
def test_plain_fix_applies_only_safe_fixes(rule, case: Invalid):
    # `--fix` without `--unsafe-fixes`: no unsafe or display-only fix is ever written, and when
    # the rule's fixes are all unsafe the case's text stays as it was.
    rules, settings = _active(rule, case)
    outcome = fix_text(case.code, "case.py", rules, settings, unsafe_fixes=False)
    assert all(d.fix.applicability == Applicability.SAFE for d in outcome.applied)
    if rule.fix_applicability != "safe":
        assert not [d for d in outcome.applied if d.code == rule.code]


@pytest.mark.parametrize("rule", list(all_rules()), ids=lambda r: r.code)
def test_rule_is_documented_and_self_tested(rule):
    assert len(rule.valid) >= 4 and len(rule.invalid) >= 4
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in rule.docs, f"{rule.code} docs lack {section}"
    # A rule about trainlint's own comments (TL001) has no section of the article behind it.
    assert rule.source is None and rule.code.startswith("TL0") or rule.source.startswith("§")
    assert rule.fix_applicability in ("safe", "unsafe", "suggestion", "none")
    if rule.fix_applicability in ("safe", "unsafe", "suggestion"):
        assert any(c.fixed for c in rule.invalid) or rule.fix_applicability == "suggestion", rule.code
