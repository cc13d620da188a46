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


def _api():
    try:
        from trainlint import api
    except ImportError:
        api = None
    if api is None or not hasattr(api, "fix_source"):
        raise VerifyError(
            "this trainlint has no fixes API (trainlint.api.fix_source) yet; "
            "pass a hand-fixed copy with --fixed FILE instead of --rule"
        )
    return api


def known_rule_codes() -> set[str] | None:
    """Codes the engine has registered, when it can say (None: cannot tell)."""
    try:
        from trainlint import api
    except ImportError:
        return None
    for name in ("rule_codes", "known_rule_codes", "all_rule_codes"):
        fn = getattr(api, name, None)
        if callable(fn):
            try:
                return {str(c).upper() for c in fn()}
            except Exception:
                return None
    return None


def fixed_text(text: str, rules: list[str], path: str) -> str:
    api = _api()
    known = known_rule_codes()
    if known is not None:
        unknown = [c for c in rules if c not in known]
        if unknown:
            raise VerifyError(f"unknown rule code(s): {', '.join(unknown)}")
    fix_error = getattr(api, "FixError", None)
    try:
        return api.fix_source(text, select=rules, unsafe_fixes=True, path=path)
    except Exception as e:  # the engine's own errors, reported as the user's problem to act on
        if fix_error is not None and isinstance(e, fix_error):
            raise VerifyError(f"the fixes for {', '.join(rules)} did not give valid Python: {e}") from None
        if isinstance(e, (ValueError, KeyError, LookupError)):
            raise VerifyError(f"cannot fix {path} with {', '.join(rules)}: {e}") from None
        raise


@dataclass
class Planned:
    """A fixed version to measure, or the reason there is nothing to measure for it."""

    variant: Variant | None
    rules: list[str]
    note: str = ""


def rule_variants(script: Path, rules: list[str], each: bool, workdir: Path) -> list[Planned]:
    """One fixed copy per rule (with --each), then one with all the rules."""
    text = script.read_text(encoding="utf-8")
    groups = [[code] for code in rules] if each and len(rules) > 1 else []
    groups.append(list(rules))
    planned = []
    for group in groups:
        name = "+".join(group)
        new = fixed_text(text, group, str(script))
        if new == text:
            planned.append(Planned(None, group, f"{name} found nothing to fix in {script.name}"))
            continue
        path = workdir / f"fixed-{name.replace('+', '_')}-{script.name}"
        path.write_text(new, encoding="utf-8")
        planned.append(Planned(Variant(name, group, str(path)), group))
    return planned


def file_variant(fixed: Path) -> Planned:
    return Planned(Variant("fixed", [], str(fixed)), [])


def original(script: Path) -> Variant:
    return Variant("original", [], str(script))
