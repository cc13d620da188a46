"""The versions of the script to measure: the original, and fixed copies made by trainlint's own
fixes (safe and unsafe) for the named rules, or the user's hand-fixed file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainlint.verify.errors import VerifyError
from trainlint.verify.runner import Variant


def parse_rules(values: tuple[str, ...] | list[str]) -> list[str]:
    """--rule TL101,TL103 --rule TL301 -> ["TL101", "TL103", "TL301"] (order kept, no repeats)."""
    out: list[str] = []
    for value in values:
        for code in value.split(","):
            code = code.strip().upper()
            if code and code not in out:
                out.append(code)
    return out


def _linter():
    """The linter's API (imported late: with --fixed the verifier needs only torch, not libcst)."""
    try:
        from trainlint import api
        from trainlint.registry import rules_by_code
    except ImportError as exc:
        raise VerifyError(
            f"--rule needs trainlint's linter, which cannot be imported here ({exc}); "
            "install trainlint with its dependencies, or pass a hand-fixed copy with --fixed FILE"
        ) from None
    return api, sorted(rules_by_code())


def expand_rules(selectors: list[str]) -> list[str]:
    """Codes and code prefixes (TL1) -> registered codes; unknown ones are the user's error.

    Checked here because the fixes API selects silently: an unknown code would fix nothing.
    """
    _, known = _linter()
    out: list[str] = []
    unknown = []
    for sel in selectors:
        # TL001 (unused noqa) is about suppression comments, never a fix to measure: a prefix
        # or ALL leaves it out (--rule ALL listed a TL001 row).
        matched = [c for c in known if c == sel or (c != "TL001" and (sel == "ALL" or c.startswith(sel)))]
        if not matched:
            unknown.append(sel)
        out += [c for c in matched if c not in out]
    if unknown:
        raise VerifyError(
            f"unknown rule code(s): {', '.join(unknown)} (known: {', '.join(known) or 'none'})"
        )
    return out


def fixed_text(text: str, rules: list[str], path: str) -> tuple[str, list[str], dict[str, int]]:
    """The text with the rules' fixes applied (safe and unsafe), the rules whose fixes were, and
    per rule how many of its findings remain without a fix (a suggestion only, or none)."""
    api, _ = _linter()
    from trainlint.fixer import fix_text

    settings = api.Settings(select=tuple(rules))
    try:
        outcome = fix_text(text, path, settings.active_rules(path), settings, unsafe_fixes=True)
        unfixed: dict[str, int] = {}
        for d in outcome.remaining:
            if d.code in rules:
                unfixed[d.code] = unfixed.get(d.code, 0) + 1
        return (outcome.text, [code for code in rules if any(d.code == code for d in outcome.applied)],
                {code: unfixed[code] for code in rules if code in unfixed})
    except api.FixError as e:
        raise VerifyError(f"the fixes for {', '.join(rules)} did not give valid Python: {e}") from None
    except api.ParseError as e:
        raise VerifyError(f"{path} does not parse: {e}") from None


# Above this many codes a group is named by its size: `--rule ALL` named a row and its notes
# with all 22 codes joined by "+".
_MOST_CODES_NAMED = 4


def group_label(codes: list[str]) -> str:
    """A group of asked rules as a row name or in a note: its codes, or how many when many."""
    if len(codes) <= _MOST_CODES_NAMED:
        return "+".join(codes)
    return f"the {len(codes)} rules asked"


def _nothing_note(group: list[str], unfixed: dict[str, int], name: str) -> str:
    """Why a group of rules gives no fixed version. Findings with only a suggestion (TL201 often)
    are not "nothing to fix": the user can write the fix and measure it with --fixed. The rules
    that found them are named, not the whole group (the note named all 22 codes of --rule ALL
    for one TL201 finding)."""
    if not unfixed:
        return f"{group_label(group)} found nothing to fix in {name}"
    found = ", ".join(f"{code} found {n} finding{'s' if n != 1 else ''}" for code, n in unfixed.items())
    return (f"{found} without an automatic fix in {name} (see `trainlint check`); write the fix "
            "by hand and measure it with --fixed FILE")


@dataclass
class Planned:
    """A fixed version to measure, or the reason there is nothing to measure for it.

    Two entries may share a variant (--each, where all the rules together fix only what one
    fixes alone); it runs once, and both rows report its measurement."""

    variant: Variant | None
    rules: list[str]  # the rules whose fixes the version holds (none: nothing to fix)
    note: str = ""
    asked: list[str] | None = None  # the rules asked for this version; None: the same as rules

    def __post_init__(self) -> None:
        if self.asked is None:
            self.asked = list(self.rules)

    @property
    def name(self) -> str:
        """The row's name: the rules whose fixes applied (--rule ALL named the combined row with
        all 22 codes when one rule's fix applied), or the asked ones when none did."""
        if self.rules:
            return "+".join(self.rules)
        return group_label(self.asked) if self.asked else "fixed"


def rule_variants(script: Path, rules: list[str], each: bool, workdir: Path) -> list[Planned]:
    """One fixed copy per rule (with --each), then one with all the rules."""
    text = script.read_text(encoding="utf-8")
    groups = [[code] for code in rules] if each and len(rules) > 1 else []
    groups.append(list(rules))
    outcomes = [fixed_text(text, group, str(script)) for group in groups]
    together = "+".join(outcomes[-1][1])
    planned = []
    for group, (new, applied, unfixed) in zip(groups, outcomes):
        if new == text:
            note = _nothing_note(group, unfixed, script.name)
            if not unfixed and len(group) == 1 < len(groups) and group[0] in outcomes[-1][1]:
                # TL103 (persistent workers) alone finds no workers to keep; after TL101's fix
                # adds them it does: "nothing to fix" alone would hide the fix the last row holds.
                note = (f"{group[0]}'s fix applies only once the other rules' fixes are in ({note} "
                        f"alone); it is measured in the {together} row")
            planned.append(Planned(None, [], note, group))
            continue
        # Named by the rules whose fixes it holds (`--rule TL1` may fix only TL103 and TL105).
        name = "+".join(applied)
        same = next((p for p in planned if p.variant is not None and p.variant.name == name), None)
        if same is not None:
            # With --each, all the rules together fixed only what one of them fixes alone: the
            # combined row is that version, measured once (it was "nothing to fix", and so was the
            # report's verdict, though a fix existed and was measured).
            planned.append(Planned(same.variant, list(applied),
                                   f"{group_label(group)} fix only what {name} fixes alone", group))
            continue
        path = workdir / f"fixed-{name.replace('+', '_')}-{script.name}"
        path.write_text(new, encoding="utf-8")
        planned.append(Planned(Variant(name, applied, str(path)), applied, "", group))
    return planned


def file_variant(fixed: Path) -> Planned:
    return Planned(Variant("fixed", [], str(fixed)), [])


def original(script: Path) -> Variant:
    return Variant("original", [], str(script))
