"""TL0xx: trainlint's own comments (no section of the seed article; Ruff's RUF100 is the model)."""

from __future__ import annotations

from trainlint.rule import NO_FIX, Invalid, Rule, Valid
from trainlint.suppressions import DUPLICATED_CODE, MISPLACED_FILE_LEVEL, UNKNOWN_CODE, UNUSED_CODE

_LOADER = "from torch.utils.data import DataLoader\n"
# The rules TL001's cases judge suppressions of; a case's other rules are off, so their codes are not judged.
_WITH_TL101 = {"select": ("TL001", "TL101")}
_WITH_TL101_TL102 = {"select": ("TL001", "TL101", "TL102")}


def _listed(codes: list[str]) -> str:
    return codes[0] if len(codes) == 1 else f"{', '.join(codes[:-1])} or {codes[-1]}"


class UnusedNoqa(Rule):
    code = "TL001"
    name = "unused-noqa"
    summary = "`# noqa` or `# trainlint: ignore[...]` code that suppresses no finding"
    source = None
    default_enabled = False
    fix_applicability = "safe"
    audits_suppressions = True
    docs = """
## What it does
Flags a trainlint code in a suppression comment (`# noqa: TL101`, `# trainlint: ignore[TL101]`,
the file-level `# trainlint: noqa: TL101`) when no finding of that rule was suppressed by it:
the code was fixed, the rule was refined, or the comment sits on a line where no finding starts
(a suppression applies to the first line of a finding that spans several).

Also flagged: a code in trainlint's namespace that no rule has (`TL109`: a typo, or a rule since
renamed; judged against the rules and rule packs installed), one written in lower case
(`tl101`: codes are compared as written, so it suppresses nothing), and a code the same comment
lists twice.

Also flagged, without a fix: a file-level `# trainlint: noqa` written after code on a line (it
suppresses nothing: as in Ruff, a file-level suppression counts only on a line of its own, and
one at the end of a line used to switch trainlint off for the whole file), and a `# noqa TL101`
without its `:`, which suppresses every rule on its line, as flake8 and Ruff read it. Both are
also warned about on standard error whether or not this rule is selected.

Only codes trainlint can judge are flagged as unused: a code, or a prefix such as `TL1`, all of
whose rules ran on the file. Another tool's code (`E501`), a blanket `# noqa`, and the code of a rule that is
not selected for the file (off by default, in `ignore` or `per-file-ignores`, or off for the
`target-torch`) are left alone. With `--ignore-noqa` nothing is suppressed, so nothing is
flagged. The rule is off by default, as Ruff's RUF100 is; select it with
`extend-select = ["TL001"]`.

## Why is this bad?
A stale suppression hides the next real finding on its line: the slow loader someone adds there
later is never reported. Suppressions pile up as code is fixed (`trainlint check --add-noqa`
adds one for every finding when adopting trainlint), and nobody removes them by hand.

## Example
```python
loader = DataLoader(dataset, batch_size=64, num_workers=8)  # noqa: TL101
```

## Use instead
```python
loader = DataLoader(dataset, batch_size=64, num_workers=8)
```

## Fix safety
Safe: the unused codes leave the comment's list (`# noqa: E501, TL101` becomes `# noqa: E501`);
a directive left with no code is removed, with the comment when nothing else is in it and the
line when nothing else is on it. Nothing the comment suppresses is lost.

A misplaced file-level suppression or a `# noqa` missing its `:` is not fixed: whether the line or
the whole file was meant, and which of the line's findings should stay hidden, is the author's call.
"""
    valid = [
        Valid(_LOADER + "loader = DataLoader(ds)  # noqa: TL101\n", settings=_WITH_TL101),
        Valid(_LOADER + "loader = DataLoader(ds)  # trainlint: ignore[TL101]\n", settings=_WITH_TL101),
        # A prefix is used when a rule it names has a finding there.
        Valid(_LOADER + "loader = DataLoader(ds)  # noqa: TL1\n", settings={"select": ("TL001", "TL1")}),
        # TL102 did not run: its code is not judged. E501 is another tool's; a blanket noqa covers anything.
        Valid(_LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL102, E501\nx = 1  # noqa\n",
              settings=_WITH_TL101),
        # The audit suppressed on its own line.
        Valid(_LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL101, TL001\n", settings=_WITH_TL101),
        # A file-level suppression that suppresses something.
        Valid("# trainlint: noqa: TL101\n" + _LOADER + "loader = DataLoader(ds)\n", settings=_WITH_TL101),
        # A finding spanning lines is suppressed on its first line.
        Valid(_LOADER + "loader = DataLoader(  # noqa: TL101\n    ds,\n)\n", settings=_WITH_TL101),
        # A misplaced or colon-less suppression whose line or file suppresses TL001 itself.
        Valid(_LOADER + "loader = DataLoader(ds)  # noqa TL101  # trainlint: ignore[TL001]\n", settings=_WITH_TL101),
        Valid("# trainlint: noqa: TL001\n" + _LOADER + "x = 1  # trainlint: noqa\n", settings=_WITH_TL101),
        # With --ignore-noqa nothing is suppressed, so nothing is judged.
        Valid(_LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL101\n",
              settings={**_WITH_TL101, "ignore_noqa": True}),
    ]
    invalid = [
        # A file-level suppression after code switched trainlint off for the whole file (both
        # loaders' findings were hidden); it now suppresses nothing, and is reported.
        Invalid(
            _LOADER + "a = DataLoader(ds)  # trainlint: noqa\nb = DataLoader(ds)\n",
            fixed=NO_FIX,
            message="Misplaced suppression: `# trainlint: noqa` after code suppresses nothing (a file-level "
                    "suppression counts only on a line of its own; for this line write `# noqa`); not fixed",
            settings=_WITH_TL101,
        ),
        Invalid(
            _LOADER + "a = DataLoader(ds)  # trainlint: noqa: TL101\n",
            fixed=NO_FIX,
            message="for this line write `# noqa: TL101`",
            settings=_WITH_TL101,
        ),
        # `# noqa TL101` (no colon) silently suppressed every rule on the line; it still does, and is reported.
        Invalid(
            _LOADER + "loader = DataLoader(ds)  # noqa TL101\n",
            fixed=NO_FIX,
            message="Invalid suppression: `# noqa` without `:` before its codes suppresses every rule on this "
                    "line (write `# noqa: TL101`); not fixed",
            settings=_WITH_TL101,
        ),
        Invalid(
            _LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL101\n",
            fixed=_LOADER + "loader = DataLoader(ds, num_workers=4)\n",
            message="no TL101 finding starts on this line",
            settings=_WITH_TL101,
        ),
        Invalid(
            _LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: E501, TL101\n",
            fixed=_LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: E501\n",
            settings=_WITH_TL101,
        ),
        Invalid(
            _LOADER + "loader = DataLoader(ds)  # trainlint: ignore[TL101, TL102]\n",
            fixed=_LOADER + "loader = DataLoader(ds)  # trainlint: ignore[TL101]\n",
            settings=_WITH_TL101_TL102,
        ),
        # On the second line of a call, the comment suppresses nothing.
        Invalid(
            _LOADER + "loader = DataLoader(\n    ds,\n    num_workers=4,  # noqa: TL101\n)\n",
            fixed=_LOADER + "loader = DataLoader(\n    ds,\n    num_workers=4,\n)\n",
            settings=_WITH_TL101,
        ),
        Invalid(
            _LOADER + "loader = DataLoader(ds, num_workers=4)  # type: ignore  # noqa: TL101\n",
            fixed=_LOADER + "loader = DataLoader(ds, num_workers=4)  # type: ignore\n",
            settings=_WITH_TL101,
        ),
        Invalid(
            _LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL101 (slow disk)\n",
            fixed=_LOADER + "loader = DataLoader(ds, num_workers=4)  # (slow disk)\n",
            settings=_WITH_TL101,
        ),
        Invalid(
            "# trainlint: noqa: TL101\n" + _LOADER + "loader = DataLoader(ds, num_workers=4)\n",
            fixed=_LOADER + "loader = DataLoader(ds, num_workers=4)\n",
            message="no TL101 finding in this file",
            settings=_WITH_TL101,
        ),
        # A code no rule has, and one listed twice, go; the other tool's code stays.
        Invalid(
            _LOADER + "loader = DataLoader(ds)  # noqa: TL101, TL109, TL101, E501\n",
            fixed=_LOADER + "loader = DataLoader(ds)  # noqa: TL101, E501\n",
            message="Unused suppression: TL109 is not a trainlint rule; TL101 listed twice",
            settings=_WITH_TL101,
        ),
        # Codes are compared as written: a lower-case one suppresses nothing.
        Invalid(
            _LOADER + "x = 1  # noqa: tl101\n",
            fixed=_LOADER + "x = 1\n",
            message="tl101 is not a trainlint rule (codes are upper case)",
            settings=_WITH_TL101,
        ),
        # ... also when the rule a code would name is not selected: no rule has it at all.
        Invalid(
            _LOADER + "x = 1  # trainlint: ignore[TL999]\n",
            fixed=_LOADER + "x = 1\n",
            message="TL999 is not a trainlint rule",
            settings=_WITH_TL101,
        ),
        Invalid(
            _LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL102, TL101, TL108\n",
            fixed=_LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL108\n",
            message="no TL102 or TL101 finding starts on this line",
            settings=_WITH_TL101_TL102,
        ),
    ]

    @classmethod
    def describe_problem(cls, text: str, directive, problem: str) -> str:
        """The message for a suppression comment that does not do what it looks like."""
        codes = ", ".join(c.text for c in directive.codes or ())
        if problem == MISPLACED_FILE_LEVEL:
            return (f"Misplaced suppression: `{text[directive.start:directive.end]}` after code suppresses nothing "
                    f"(a file-level suppression counts only on a line of its own; for this line write "
                    f"`# noqa{': ' + codes if codes else ''}`); not fixed: whether the line or the file was meant "
                    f"is for you to say")
        if text.startswith(":", directive.end):
            return ("Invalid suppression: `# noqa:` lists no code, so it suppresses every rule on this line; not "
                    "fixed: which of the line's findings should stay hidden is for you to say")
        written = text[directive.end:directive.comment_end].split("#")[0].strip()
        example = f"`# noqa: {written}`" if written else "`# noqa: TL101`"
        return (f"Invalid suppression: `# noqa` without `:` before its codes suppresses every rule on this line "
                f"(write {example}); not fixed: which of the line's findings should stay hidden is for you to say")

    @classmethod
    def describe(cls, directive, unused) -> tuple[str, str]:
        """The finding's message and its fix's, for the `unused` (code, why) pairs of `directive`."""
        by_why = {why: [code.text for code, w in unused if w == why]
                  for why in (UNUSED_CODE, UNKNOWN_CODE, DUPLICATED_CODE)}
        where = "in this file" if directive.file_level else "starts on this line"
        parts = []
        if by_why[UNUSED_CODE]:
            parts.append(f"no {_listed(by_why[UNUSED_CODE])} finding {where}")
        if by_why[UNKNOWN_CODE]:
            codes = by_why[UNKNOWN_CODE]
            parts.append(f"{_listed(codes).replace(' or ', ' and ')} "
                         f"{'is not a trainlint rule' if len(codes) == 1 else 'are not trainlint rules'}"
                         + (" (codes are upper case)" if any(c != c.upper() for c in codes) else ""))
        if by_why[DUPLICATED_CODE]:
            parts.append(f"{_listed(by_why[DUPLICATED_CODE]).replace(' or ', ' and ')} listed twice")
        message = "Unused suppression: " + "; ".join(parts)
        if len(unused) == len(directive.codes):
            return message, "Remove the unused suppression"
        removed = [code.text for code, _why in unused]
        return message, f"Remove {_listed(removed).replace(' or ', ' and ')} from the suppression"
