"""`--baseline FILE`: record today's findings, then report only findings that are new.

Findings are matched by fingerprint (rule code, path relative to the baseline file, the flagged
line(s) with whitespace normalised, and the occurrence index among identical ones), not by line
number, so code moving up or down the file does not resurface baselined findings.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from trainlint.atomic import write_atomic
from trainlint.diagnostics import Diagnostic, RunResult
from trainlint.fingerprint import fingerprints
from trainlint.gitutil import relative_posix
from trainlint.textpos import LineIndex

FORMAT = "trainlint-baseline"
VERSION = 1


class BaselineError(Exception):
    """A baseline file that cannot be read or written; the message names the file and why."""


def _source_getter(result: RunResult):
    def source_of(path: str) -> str | None:
        text = result.source_of(path)
        if text is None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        return text

    return source_of


def _prints(result: RunResult, baseline: Path) -> tuple[list[Diagnostic], list[str]]:
    root = baseline.resolve().parent
    diags = [d for d in result.diagnostics if not d.fixed]
    return diags, fingerprints(diags, _source_getter(result), lambda p: relative_posix(p, root))


def write_baseline(result: RunResult, path: str | os.PathLike) -> int:
    """Write every current (unfixed) finding to `path`; returns how many were recorded."""
    target = Path(path)
    diags, prints = _prints(result, target)
    root = target.resolve().parent
    findings = [
        {
            "code": d.code,
            "path": relative_posix(d.path, root),
            "fingerprint": fp,
            # Informational only: matching never uses the line.
            "line": d.start.row,
            "message": d.message,
        }
        for d, fp in zip(diags, prints)
    ]
    findings.sort(key=lambda f: (f["path"], f["line"], f["code"], f["fingerprint"]))
    doc = {"format": FORMAT, "version": VERSION, "findings": findings}
    try:
        write_atomic(target, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError as exc:
        raise BaselineError(f"{target}: cannot write baseline: {exc.strerror or exc}") from None
    return len(findings)


def read_baseline(path: str | os.PathLike) -> set[str]:
    target = Path(path)
    try:
        doc = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{target}: baseline file does not exist") from None
    except OSError as exc:
        raise BaselineError(f"{target}: cannot read baseline: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{target}: not a trainlint baseline (invalid JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BaselineError(f"{target}: not a trainlint baseline (missing \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise BaselineError(f"{target}: unsupported baseline version {doc.get('version')!r} (expected {VERSION})")
    findings = doc.get("findings")
    if not isinstance(findings, list) or not all(isinstance(f, dict) and isinstance(f.get("fingerprint"), str) for f in findings):
        raise BaselineError(f"{target}: \"findings\" must be a list of objects with a \"fingerprint\" string")
    return {f["fingerprint"] for f in findings}


class BaselineMatch:
    """The baseline's fingerprints, matched in the worker during --fix and --diff. Recorded
    findings are held back from fixing (old code stays as it is, as with `# noqa`), and a finding
    is matched by the text its lines had before this run's fixes: a safe fix of a new finding
    that rewrote the line of a recorded one (TL102 adding pin_memory=True beside a baselined
    TL101) made the recorded one "new", on every run after. Plain picklable data: it travels
    to the worker processes in the run's Mode."""

    def __init__(self, known: frozenset[str], root: str) -> None:
        self.known = known
        self.root = root

    @classmethod
    def read(cls, path: str | os.PathLike) -> "BaselineMatch":
        return cls(frozenset(read_baseline(path)), str(Path(path).resolve().parent))

    def held(self, diags: list[Diagnostic], original: str, to_original=lambda offset, end=False: offset) -> set[int]:
        """The ids of the diags the baseline records. to_original maps their offsets back to
        the text `original`, as it was before this run's fixes; they are fingerprinted there."""
        prints = self._prints_before_fixes(diags, original, to_original)
        return {id(d) for d, fp in zip(diags, prints) if fp in self.known}

    def _prints_before_fixes(self, diags: list[Diagnostic], original: str, to_original) -> list[str]:
        """The fingerprints diags had in `original`, the text before this run's fixes (the ones
        the baseline file records): their offsets are mapped back there by to_original."""
        index = LineIndex(original)
        placed = [replace(d, start=index.location(to_original(d.start_offset)),
                          end=index.location(to_original(d.end_offset, True))) for d in diags]
        return fingerprints(placed, lambda _path: original, lambda p: relative_posix(p, self.root))

    def new_only(self, diags: list[Diagnostic], original: str, to_original=lambda offset, end=False: offset):
        """diags without those the baseline records."""
        held = self.held(diags, original, to_original)
        return [d for d in diags if id(d) not in held]

    def moved(self, diags: list[Diagnostic], original: str, fixed: str, to_original) -> list[tuple[str, str, int]]:
        """(recorded fingerprint, fingerprint in the fixed text, line there) of each recorded
        finding among diags (the findings of the fixed text) whose line this run's fixes
        rewrote: written back to the baseline file, so the next run, which reads the fixed
        text, still knows it (it would be "new" there, on every run after)."""
        before = self._prints_before_fixes(diags, original, to_original)
        after = fingerprints(diags, lambda _path: fixed, lambda p: relative_posix(p, self.root))
        return [(old, new, d.start.row) for d, old, new in zip(diags, before, after) if old in self.known and old != new]


def follow_moves(path: str | os.PathLike, moves: list[tuple[str, str, int]]) -> int:
    """Give the baseline's entries the fingerprints (and lines) BaselineMatch.moved found for
    them after --fix rewrote their lines; returns how many entries changed."""
    target = Path(path)
    read_baseline(target)  # the checks, with their messages
    doc = json.loads(target.read_text(encoding="utf-8"))
    renamed = {old: (new, row) for old, new, row in moves}
    changed = 0
    for finding in doc["findings"]:
        if finding["fingerprint"] in renamed:
            finding["fingerprint"], finding["line"] = renamed.pop(finding["fingerprint"])
            changed += 1
    if changed:
        doc["findings"].sort(key=lambda f: (f.get("path", ""), f.get("line", 0), f.get("code", ""), f["fingerprint"]))
        try:
            write_atomic(target, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        except OSError as exc:
            raise BaselineError(f"{target}: cannot write baseline: {exc.strerror or exc}") from None
    return changed


def filter_new(result: RunResult, path: str | os.PathLike) -> RunResult:
    """`result` with the findings recorded in the baseline at `path` removed (errors are kept)."""
    known = read_baseline(path)
    diags, prints = _prints(result, Path(path))
    keep = {id(d) for d, fp in zip(diags, prints) if fp not in known}
    files = [
        replace(f, diagnostics=[d for d in f.diagnostics if d.fixed or id(d) in keep])
        for f in result.files
    ]
    return replace(result, files=files)


def apply_baseline(result: RunResult, path: str | os.PathLike) -> tuple[RunResult, int | None]:
    """The CLI's `--baseline FILE`: the first run (no file yet) records the findings and reports
    none; later runs report only new findings. Returns (result to report, count written or None)."""
    if not Path(path).exists():
        written = write_baseline(result, path)
        files = [replace(f, diagnostics=[d for d in f.diagnostics if d.fixed]) for f in result.files]
        return replace(result, files=files), written
    return filter_new(result, path), None


__all__ = ["BaselineError", "BaselineMatch", "apply_baseline", "filter_new", "follow_moves", "read_baseline",
           "write_baseline"]
