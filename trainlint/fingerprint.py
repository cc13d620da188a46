"""Stable identities for findings, independent of line numbers.

A finding is identified by its rule code, its file, the text of the line(s) it flags with
whitespace normalised, and how many identical (code, file, text) findings came before it in the
file. Adding or removing lines elsewhere in the file, or re-indenting the block, keeps the
identity; editing the flagged line itself makes it a new finding, which is what a baseline and a
re-run review want.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Callable, Iterable

from trainlint.diagnostics import Diagnostic
from trainlint.textpos import LineIndex, line_range

_SPACE = re.compile(r"\s+")


def flagged_text(index: LineIndex | None, diag: Diagnostic) -> str:
    if index is None:
        # Without the source, the message is the best line-independent stand-in.
        return "message:" + diag.message
    first, last = line_range(diag)
    return "\n".join(_SPACE.sub(" ", index.line(row)).strip() for row in range(first, last + 1))


def fingerprints(
    diagnostics: Iterable[Diagnostic],
    source_of: Callable[[str], str | None],
    path_key: Callable[[str], str] = lambda p: p,
) -> list[str]:
    """One hex fingerprint per diagnostic, in the order given.

    Occurrence indexes count in source order (row, column), so they do not depend on the order
    the caller passes the diagnostics in.
    """
    diags = list(diagnostics)
    indexes: dict[str, LineIndex | None] = {}
    keys = []
    for diag in diags:
        if diag.path not in indexes:
            source = source_of(diag.path)
            indexes[diag.path] = LineIndex(source) if source is not None else None
        keys.append((diag.code, path_key(diag.path), flagged_text(indexes[diag.path], diag)))
    order = sorted(range(len(diags)), key=lambda i: (keys[i], diags[i].start, diags[i].end))
    seen: Counter = Counter()
    out = [""] * len(diags)
    for i in order:
        n = seen[keys[i]]
        seen[keys[i]] += 1
        code, path, text = keys[i]
        raw = "\0".join((code, path, text, str(n)))
        out[i] = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return out
