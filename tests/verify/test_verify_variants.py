"""The fixed versions `--rule` makes, before anything runs (no torch needed): each is named by
the rules whose fixes it holds, not by the codes asked for."""

from trainlint.verify.variants import expand_rules, rule_variants

from conftest import FIXTURES

SCRIPT = FIXTURES / "short_epochs.py"


def _plan(tmp_path, codes, each=False):
    return [(p.variant.name if p.variant else None, p.rules, p.note)
            for p in rule_variants(SCRIPT, codes, each, tmp_path)]


def test_a_prefix_names_the_fixes_applied(tmp_path):
    # TL1 selects TL101..TL108; only two of them have something to fix here (not TL105: the 64
    # samples come in full batches of 16).
    assert _plan(tmp_path, expand_rules(["TL1"])) == [("TL103+TL104", ["TL103", "TL104"], "")]


def test_each_says_when_all_together_fix_only_one_rule(tmp_path):
    assert _plan(tmp_path, ["TL103", "TL201"], each=True) == [
        ("TL103", ["TL103"], ""),
        (None, ["TL201"], "TL201 found nothing to fix in short_epochs.py"),
        # The combined version is TL103's, measured once for both rows: it was None ("nothing to
        # fix"), which made the report's top-level verdict "nothing to fix" though TL103's fix
        # had been measured.
        ("TL103", ["TL103", "TL201"], "TL103+TL201 fix only what TL103 fixes alone"),
    ]
