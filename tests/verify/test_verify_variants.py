"""The fixed versions `--rule` makes, before anything runs (no torch needed): each is named by
the rules whose fixes it holds, not by the codes asked for."""

from trainlint.verify.variants import expand_rules, rule_variants

from conftest import FIXTURES

SCRIPT = FIXTURES / "short_epochs.py"


def _plan(tmp_path, codes, each=False):
    return [(p.variant.name if p.variant else None, p.rules, p.note)
            for p in rule_variants(SCRIPT, codes, each, tmp_path)]


def _rows(tmp_path, codes, each=False, script=SCRIPT):
    return [(p.name, p.rules, p.asked, p.note) for p in rule_variants(script, codes, each, tmp_path)]


def test_a_prefix_names_the_fixes_applied(tmp_path):
    # TL1 selects TL101..TL108; only two of them have something to fix here (not TL105: the 64
    # samples come in full batches of 16).
    assert _plan(tmp_path, expand_rules(["TL1"])) == [("TL103+TL104", ["TL103", "TL104"], "")]


def test_each_says_when_all_together_fix_only_one_rule(tmp_path):
    assert _rows(tmp_path, ["TL103", "TL201"], each=True) == [
        ("TL103", ["TL103"], ["TL103"], ""),
        # A rule that fixes nothing holds no fix: its rules are none, the asked one names the row.
        ("TL201", [], ["TL201"], "TL201 found nothing to fix in short_epochs.py"),
        # The combined version is TL103's, measured once for both rows: it was None ("nothing to
        # fix"), which made the report's top-level verdict "nothing to fix" though TL103's fix
        # had been measured. It is named by the fix it holds (it was TL103+TL201).
        ("TL103", ["TL103"], ["TL103", "TL201"], "TL103+TL201 fix only what TL103 fixes alone"),
    ]


def test_all_names_the_combined_version_by_the_fixes_applied(tmp_path):
    # --rule ALL --each named the combined row with all the codes joined by "+" (and its note
    # too), though only TL103's and TL104's fixes applied.
    codes = expand_rules(["ALL"])
    combined = rule_variants(SCRIPT, codes, True, tmp_path)[-1]
    assert combined.name == "TL103+TL104" and combined.rules == ["TL103", "TL104"]
    assert combined.asked == codes
    assert [p.name for p in rule_variants(SCRIPT, codes[:6], False, tmp_path)] == ["TL103+TL104"]


def test_all_leaves_out_the_unused_noqa_meta_rule():
    # --rule ALL listed a TL001 row: TL001 reports unused suppression comments, never a fix to
    # measure.
    codes = expand_rules(["ALL"])
    assert "TL001" not in codes and "TL101" in codes


def test_findings_with_only_a_suggestion_are_not_nothing_to_fix(tmp_path):
    # A per-step print(loss.item()) whose TL201 finding has a suggestion only: the note said
    # "TL201 found nothing to fix", though it found one; it now says so and points to --fixed.
    # (It names a device: TL201 leaves a script that names none alone, as it trains on the CPU.)
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "m = torch.nn.Linear(4, 1).to(device); o = torch.optim.SGD(m.parameters(), 0.1)\n"
        "for i in range(10):\n"
        "    o.zero_grad(); l = m(torch.randn(2, 4, device=device)).sum(); l.backward(); o.step(); print(l.item())\n"
    )
    [(name, rules, note)] = [(p.variant, p.rules, p.note)
                             for p in rule_variants(script, ["TL201"], False, tmp_path)]
    assert name is None and rules == []
    assert note.startswith("TL201 found 1 finding without an automatic fix in train.py")
    assert "--fixed FILE" in note


def test_a_finding_without_a_fix_is_named_by_its_rule(tmp_path):
    # --rule ALL: the note said "TL101+TL102+...+TL602 found 1 finding without an automatic
    # fix": it names the rule that found it now.
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "m = torch.nn.Linear(4, 1).to(device); o = torch.optim.SGD(m.parameters(), 0.1)\n"
        "for i in range(10):\n"
        "    o.zero_grad(); l = m(torch.randn(2, 4, device=device)).sum(); l.backward(); o.step(); print(l.item())\n"
    )
    codes = expand_rules(["TL2", "TL6"])  # six rules; none has an automatic fix here
    [p] = rule_variants(script, codes, False, tmp_path)
    assert p.variant is None and p.rules == [] and p.asked == codes
    assert p.note.startswith("TL201 found 1 finding without an automatic fix in train.py"), p.note
    assert p.name == f"the {len(codes)} rules asked"


def test_each_says_when_a_rules_fix_needs_anothers(tmp_path):
    # No workers: TL103 (persistent workers) has nothing to fix until TL101's fix adds them. Its
    # row said "TL103 found nothing to fix", while the combined row held TL103's fix.
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.read_text(encoding="utf-8").replace(", num_workers=2", ""), encoding="utf-8")
    rows = _rows(tmp_path, ["TL101", "TL103"], each=True, script=script)
    assert [(name, rules) for name, rules, _asked, _note in rows] == [
        ("TL101", ["TL101"]), ("TL103", []), ("TL101+TL103", ["TL101", "TL103"])]
    assert rows[1][3] == ("TL103's fix applies only once the other rules' fixes are in (TL103 found "
                          "nothing to fix in train.py alone); it is measured in the TL101+TL103 row")
    assert rows[0][3] == rows[2][3] == ""
