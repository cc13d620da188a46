"""Running the engine over files: read, lint or fix, write; one FileResult per file.

check_file is the unit of work (plain arguments, so a process pool can run it).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from trainlint.config import Settings, SettingsResolver
from trainlint.diagnostics import FileError, FileResult, RunResult
from trainlint.discovery import discover
from trainlint.engine import ParseError, lint_text
from trainlint.fixer import FixError, fix_text
from trainlint.source import SourceError, read_source
from trainlint.writer import write_fixed


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # compute fixes and a diff, write nothing


def check_file(path: str, settings: Settings, mode: Mode) -> FileResult:
    result = FileResult(path=path)
    try:
        source = read_source(path)
    except SourceError as exc:
        result.error = FileError(path, str(exc))
        return result
    rules = settings.active_rules(path)
    result.source = source.text
    try:
        if not (mode.fix or mode.diff):
            result.diagnostics = lint_text(source.text, path, rules, settings)
            return result
        outcome = fix_text(source.text, path, rules, settings, unsafe_fixes=mode.unsafe_fixes)
    except (ParseError, FixError) as exc:
        result.error = FileError(path, str(exc))
        return result
    except RecursionError:
        result.error = FileError(path, "too deeply nested to analyse")
        return result
    if mode.diff:
        if outcome.text != source.text:
            result.diff = "".join(
                difflib.unified_diff(
                    source.text.splitlines(keepends=True), outcome.text.splitlines(keepends=True),
                    fromfile=path, tofile=path,
                )
            )
        # Nothing is written: report what is still there, fixable ones included.
        result.diagnostics = lint_text(source.text, path, rules, settings)
        result.fixed = len(outcome.applied)
        return result
    if outcome.text != source.text:
        try:
            write_fixed(source, outcome.text)
        except SourceError as exc:
            result.error = FileError(path, str(exc))
            result.diagnostics = lint_text(source.text, path, rules, settings)
            return result
        result.source = outcome.text
    result.fixed = len(outcome.applied)
    result.applied = outcome.applied
    result.diagnostics = outcome.remaining
    return result


def run(paths: list[str], resolver: SettingsResolver, mode: Mode = Mode(), force_exclude: bool = False) -> RunResult:
    files, missing = discover(paths, resolver, force_exclude)
    result = RunResult(fix_mode=mode.fix)
    for path in missing:
        result.files.append(FileResult(path=path, error=FileError(path, "no such file or directory")))
    for path in files:
        result.files.append(check_file(path, resolver.for_path(path), mode))
    return result
