"""Applying fixes to a text: non-overlapping edits per round, re-lint, repeat to a fixed point.

A round's result must parse (Black's habit: prove the output is still Python). When it does not,
the fixes that break it on their own are left out, reported (FixOutcome.refused), and the round is
tried again without them: one rule's broken fix no longer keeps every other fix of the file from
being written. Only when the fixes break the code together, and none alone, is the file left as it
was and the failure reported.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import Counter
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
    applied: list[Diagnostic] = field(default_factory=list)  # the findings whose fixes were applied (counted)
    remaining: list[Diagnostic] = field(default_factory=list)
    # Fixed too, but findings only a rule's own earlier fix made (not counted; see _follow_ups).
    follow_ups: list[Diagnostic] = field(default_factory=list)
    # The edits of each round, in order: to_original maps an offset of `text` back through them.
    rounds: list[list] = field(default_factory=list)
    # Findings whose fix was left out because it alone made the code invalid, with why.
    refused: list[tuple[Diagnostic, str]] = field(default_factory=list)

    def to_original(self, offset: int, end: bool = False) -> int:
        """The offset in the text before any fix of an offset in the fixed text (see back_offset)."""
        for edits in reversed(self.rounds):
            offset = back_offset(edits, offset, end)
        return offset


def back_offset(edits: list, offset: int, end: bool = False) -> int:
    """The offset in the text before `edits` (non-overlapping) of an offset in the text after
    them. An offset inside text an edit wrote maps to where that edit starts (end: where it
    ends): a finding on a line a fix rewrote keeps the line it had, so the baseline can still
    recognise it by that line's text."""
    delta = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        new_start = edit.start + delta
        if offset < new_start:
            break
        if offset < new_start + len(edit.content) or (end and offset == new_start + len(edit.content) and edit.content):
            return edit.end if end else edit.start
        delta += len(edit.content) - (edit.end - edit.start)
    return offset - delta


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


def fix_text(text: str, path: str, rules: list[ActiveRule], settings=None, *, unsafe_fixes: bool = False,
             hold=None) -> FixOutcome:
    """hold(diagnostics, outcome): the ids of the findings whose fixes are not to be applied
    (--baseline: recorded findings stay as they are, as `# noqa` ones do); outcome.to_original
    maps the diagnostics' offsets back to `text`."""
    rounds: list[list[Diagnostic]] = []  # the findings whose fixes each round applied
    outcome = FixOutcome(text)
    current = text
    diagnostics = original = lint_text(current, path, rules, settings)
    # A fix must not write what this Python cannot read, if it could read the original: asked
    # once, when a fix is made (most files get none).
    compiles = functools.cache(lambda: _compiles(text))
    refused: dict[tuple, int] = {}  # a refused finding (_identity) -> its entry in outcome.refused
    for _ in range(MAX_ROUNDS):
        held = hold(diagnostics, outcome) if hold is not None else set()
        held |= {id(d) for d in diagnostics if _identity(d, outcome) in refused}
        chosen = choose_fixes([d for d in diagnostics if id(d) not in held], unsafe_fixes)
        if not chosen:
            break
        edits = chosen_edits(chosen)
        new_text = apply_edits(current, edits)
        if new_text == current:
            break
        invalid = _invalid(new_text, compiles)
        if invalid is not None:
            # Which fixes break the code on their own: those are left out, the others tried again.
            culprits = [(d, why) for d in chosen
                        if (why := _invalid(apply_edits(current, list(d.fix.edits)), compiles)) is not None]
            if not culprits:  # only together: nothing is written
                codes = ", ".join(sorted({d.code for d in chosen}))
                raise FixError(f"not fixed: the fixes for {codes} would produce {invalid}") from None
            for diag, why in culprits:
                refused[_identity(diag, outcome)] = len(outcome.refused)
                outcome.refused.append((diag, why))
            continue
        rounds.append(chosen)
        outcome.rounds.append(edits)
        current = new_text
        diagnostics = lint_text(current, path, rules, settings)
    applied, follow_ups = _follow_ups(original, rounds)
    for diag in applied + follow_ups:
        diag.fixed = True
    outcome.text, outcome.applied, outcome.remaining, outcome.follow_ups = current, applied, diagnostics, follow_ups
    for diag in diagnostics:  # a refused finding is named where it is in the text the fixes leave
        at = refused.get(_identity(diag, outcome))
        if at is not None:
            diag.fix = None  # not offered as fixable ("[*]") where it cannot be written
            outcome.refused[at] = (diag, outcome.refused[at][1])
    return outcome


def _identity(diag: Diagnostic, outcome: FixOutcome) -> tuple:
    """A finding, recognised again in a later round's text: its rule, message and where it starts
    in the text before any fix."""
    return diag.code, diag.message, outcome.to_original(diag.start_offset)


def _invalid(text: str, compiles) -> str | None:
    """Why text is not code a fix may write, or None: it must parse, and compile here when the
    original did (compiles(): whether it did)."""
    try:
        parse(text)
    except ParseError as exc:
        return f"invalid code ({exc})"
    if compiles() and not _compiles(text):
        return f"code this Python ({sys.version_info.major}.{sys.version_info.minor}) cannot parse"
    return None


def _follow_ups(original: list[Diagnostic], rounds: list[list[Diagnostic]]):
    """The applied fixes split into the findings that count ("Fixed N errors") and follow-ups.

    A rule may finish its fix in a later round: TL401 rewrites `autocast(...)` first, and the
    `from torch.cuda.amp import autocast` that leaves unused is its own finding in the next round.
    Counting that one said "Found 4 errors (4 fixed)" for the 2 findings `check` showed. Such a
    fix is marked (Fix.follow_up); it counts only in the first round or when the same finding
    was in the original text (its fix waited for a round). Other findings of later rounds count:
    fixes that took turns on a shared line, and findings another rule's fix made (a loader given
    workers by TL101 is then told to keep them by TL103), as Ruff counts them."""
    before = Counter((d.code, d.message) for d in original)
    counted: list[Diagnostic] = []
    follow_ups: list[Diagnostic] = []
    for number, chosen in enumerate(rounds):
        for diag in chosen:
            key = (diag.code, diag.message)
            if number and diag.fix.follow_up and not before[key]:
                follow_ups.append(diag)
                continue
            before[key] -= 1
            counted.append(diag)
    return counted, follow_ups
