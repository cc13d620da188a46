"""Applying fixes to a text: non-overlapping edits per round, re-lint, repeat to a fixed point.

A round's result must parse; otherwise the file is left as it was and the failure reported
(Black's habit: prove the output is still Python).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field

from trainlint.diagnostics import Diagnostic
from trainlint.engine import ActiveRule, ParseError, lint_text, parse
from trainlint.textpos import apply_edits

# Fixes that share a line take turns, one a round: a line with a dozen `.cuda()` calls needs a
# dozen rounds. Ruff stops at 100 too; a round without a fix ends the loop long before.
MAX_ROUNDS = 100


class FixError(Exception):
    pass


@dataclass
class FixOutcome:
    text: str
    applied: list[Diagnostic] = field(default_factory=list)  # the diagnostics whose fixes were applied
    remaining: list[Diagnostic] = field(default_factory=list)


def choose_fixes(diagnostics: list[Diagnostic], unsafe_fixes: bool) -> list[Diagnostic]:
    """Applicable fixes whose edits share no line with an earlier chosen fix's edits. A finding
    whose fix has exactly the edits of one already chosen (a rule that fixes several findings
    with one change, as TL402 does) is chosen with it: it is fixed by the same edits."""
    chosen: list[Diagnostic] = []
    taken: list[tuple[int, int]] = []
    shared: set[tuple] = set()
    for diag in diagnostics:
        if not diag.fixable(unsafe_fixes):
            continue
        if diag.fix.edits in shared:
            chosen.append(diag)
            continue
        spans = [(e.start_loc.row, e.end_loc.row) for e in diag.fix.edits]
        # Each fix lays its code out for the line as it finds it (wrapped when longer than
        # line-length), so two fixes of one line would each fit and together not: `enabled=` made
        # longer beside an `init_scale=` added to the same one-line call. Edits that merely touch
        # do not compose either (`torch.cuda.amp.autocast(` and an insertion before its `)`).
        # The later fix is re-derived from the result in the next round instead.
        if any(s <= te and ts <= e for s, e in spans for ts, te in taken):
            continue
        chosen.append(diag)
        taken.extend(spans)
        shared.add(diag.fix.edits)
    return chosen


def chosen_edits(chosen: list[Diagnostic]) -> list:
    """The edits of the chosen fixes, those of a fix shared by several findings once."""
    return [e for fix_edits in dict.fromkeys(d.fix.edits for d in chosen) for e in fix_edits]


def _compiles(text: str) -> bool:
    """The running interpreter reads the text (libcst reads the syntax of every Python version,
    so a fix could write what only a newer one parses: same-quote strings inside an f-string)."""
    try:
        compile(text, "<fixed>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def fix_text(text: str, path: str, rules: list[ActiveRule], settings=None, *, unsafe_fixes: bool = False) -> FixOutcome:
    applied: list[Diagnostic] = []
    current = text
    diagnostics = lint_text(current, path, rules, settings)
    compiled = None  # whether the original text compiles here: asked once, when a fix is made
    for _ in range(MAX_ROUNDS):
        chosen = choose_fixes(diagnostics, unsafe_fixes)
        if not chosen:
            break
        new_text = apply_edits(current, chosen_edits(chosen))
        if new_text == current:
            break
        try:
            parse(new_text)
        except ParseError as exc:
            codes = ", ".join(sorted({d.code for d in chosen}))
            raise FixError(f"not fixed: the fixes for {codes} would produce invalid code ({exc})") from None
        if compiled is None:
            compiled = _compiles(text)
        if compiled and not _compiles(new_text):
            codes = ", ".join(sorted({d.code for d in chosen}))
            raise FixError(f"not fixed: the fixes for {codes} would produce code this Python "
                           f"({sys.version_info.major}.{sys.version_info.minor}) cannot parse") from None
        applied.extend(chosen)
        current = new_text
        diagnostics = lint_text(current, path, rules, settings)
    for diag in applied:
        diag.fixed = True
    return FixOutcome(current, applied, diagnostics)
