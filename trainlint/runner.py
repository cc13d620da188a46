"""Running the engine over files: read, lint or fix, write; one FileResult per file.

check_file is the unit of work (plain arguments, so a process pool can run it). run() looks each
file up in the cache first, hands the rest to a process pool (--jobs), and returns the results
in discovery order whatever order the workers finished in, so the output never depends on the
number of jobs.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass

from trainlint.config import Settings, SettingsResolver
from trainlint.diagnostics import FileError, FileResult, RunResult
from trainlint.discovery import discover
from trainlint.source import MAX_BYTES, SourceError, SourceFile, digest_bytes, encode, load, read_source
from trainlint.suppressions import problem_warning, problems
from trainlint.writer import write_fixed


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # compute fixes and a diff, write nothing
    # --baseline with --fix or --diff (a trainlint.baseline.BaselineMatch): recorded findings are
    # neither fixed nor reported, matched by their lines as they were before this run's fixes.
    baseline: object = None


def check_file(path: str, settings: Settings, mode: Mode) -> FileResult:
    return _checked(path, settings, mode)[0]


def _checked(path: str, settings: Settings, mode: Mode) -> tuple[FileResult, str | None]:
    """_check_file, with one file's internal error turned into that file's error line."""
    return _guarded(path, lambda: _check_file(path, settings, mode))


def _guarded(path: str, check):
    """check(), or (an internal-error result for path, None) when it raises."""
    try:
        return check()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - one file's bug must not end the run or print a traceback
        result = FileResult(path=path)
        where = ""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
        result.error = FileError(
            path, f"internal error: {type(exc).__name__}: {exc}{where}; the file was not changed; please report this",
            internal=True,
        )
        return result, None


def _check_file(path: str, settings: Settings, mode: Mode) -> tuple[FileResult, str | None]:
    """The result, and the sha256 of the bytes it was computed from (None if the file could not
    be read): the cache stores the result under what the worker really read."""
    try:
        source = read_source(path)
    except SourceError as exc:
        return FileResult(path=path, error=FileError(path, str(exc))), None
    return _check_source(source, path, settings, mode), source.digest


def _check_source(source, path: str, settings: Settings, mode: Mode, write: bool = True) -> FileResult:
    """write=False (standard input): with --fix, the fixed text is left in result.source."""
    # Imported on first use, not at the top: they pull in libcst (a few hundred milliseconds),
    # which a run answered entirely from the cache never needs.
    from trainlint.engine import ParseError, lint_text
    from trainlint.fixer import FixError, fix_text

    result = FileResult(path=path)
    rules = settings.active_rules(path)
    result.source = source.text
    try:
        if not (mode.fix or mode.diff):
            result.diagnostics = lint_text(source.text, path, rules, settings)
            return result
        hold = None
        if mode.baseline is not None:
            def hold(diags, so_far):
                return mode.baseline.held(diags, source.text, so_far.to_original)
        outcome = fix_text(source.text, path, rules, settings, unsafe_fixes=mode.unsafe_fixes, hold=hold)
    except (ParseError, FixError) as exc:
        result.error = FileError(path, str(exc))
        return result
    except RecursionError:
        result.error = FileError(path, "too deeply nested to analyse")
        return result
    result.warnings = _refused_warnings(path, outcome, source.text if mode.diff else None)
    if mode.diff:
        if outcome.text != source.text:
            import difflib  # here: only --diff needs it

            before, after = source.text, outcome.text
            if source.notebook is not None:  # the patch is of the file: the notebook's JSON
                try:
                    before, after = source.notebook.raw, encode(source, outcome.text).decode("utf-8-sig")
                except SourceError as exc:
                    result.error = FileError(path, str(exc))
                    return result
            # A name with a space ends with a tab, as git writes it: `patch` reads the name up to
            # the first whitespace otherwise (and asked which file to patch).
            name = path + "\t" if " " in path else path
            result.diff = "".join(_ended(line) for line in difflib.unified_diff(
                _patch_lines(before), _patch_lines(after), fromfile=name, tofile=name))
        # Nothing is written: report what is still there, fixable ones included.
        result.diagnostics = _new_only(mode, lint_text(source.text, path, rules, settings), source.text)
        result.fixed = len(outcome.applied)
        result.applied = outcome.applied  # what --show-fixes lists as would-be fixes
        return result
    if outcome.text != source.text and write:
        try:
            write_fixed(source, outcome.text)
        except SourceError as exc:
            result.error = FileError(path, str(exc))
            result.diagnostics = _new_only(mode, lint_text(source.text, path, rules, settings), source.text)
            return result
    result.source = outcome.text
    result.fixed = len(outcome.applied)
    result.applied = outcome.applied
    result.diagnostics = _new_only(mode, outcome.remaining, source.text, outcome.to_original)
    if mode.baseline is not None and outcome.text != source.text and write:
        result.baseline_moves = mode.baseline.moved(outcome.remaining, source.text, outcome.text,
                                                    outcome.to_original)
    return result


def _refused_warnings(path: str, outcome, original: str | None) -> list[str]:
    """A line for standard error per fix left out because it alone broke the code, at the
    finding's place in the text the fixes leave, or in `original` (--diff: nothing is written)."""
    from trainlint.textpos import LineIndex

    index = LineIndex(original) if original is not None else None
    out = []
    for diag, why in outcome.refused:
        at = index.location(outcome.to_original(diag.start_offset)) if index is not None else diag.start
        out.append(f"{path}:{at.row}:{at.column}: warning: {diag.code}'s fix was not applied: it would produce "
                   f"{why}; the other fixes were (this is a bug in trainlint: please report it)")
    return out


def _patch_lines(text: str) -> list[str]:
    """text's lines as patch tools read them: each ends at a `\\n` (a `\\r` before it stays in
    the line; an old Mac file's `\\r` alone ends none), the last one may end without. Not
    str.splitlines, which also splits at `\\r`, form feeds and Unicode line separators: `git
    apply` refused those patches as corrupt."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def _ended(line: str) -> str:
    """A line of the patch, a last one without a newline marked as unified diffs mark it."""
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _new_only(mode: Mode, diagnostics, original: str, to_original=lambda offset, end=False: offset):
    """diagnostics less those mode.baseline records (all of them without one)."""
    return diagnostics if mode.baseline is None else mode.baseline.new_only(diagnostics, original, to_original)


def check_stdin(raw: bytes, path: str, resolver: SettingsResolver, mode: Mode = Mode(),
                force_exclude: bool = False) -> tuple[RunResult, bytes]:
    """Check source read from standard input (an editor's buffer), named `path` for settings,
    excludes and output; nothing is written to disk. Returns the run's result and the bytes to
    hand back with --fix: the fixed source in the input's encoding, BOM and line endings, or the
    input itself, unchanged, when there is nothing to fix, the name is excluded (--force-exclude),
    or the source cannot be read or fixed, so an editor that replaces its buffer loses nothing."""
    result = RunResult(fix_mode=mode.fix)
    settings = resolver.for_path(path)
    if force_exclude and settings.is_excluded(path):
        return result, raw
    file_result = FileResult(path=path)
    try:
        if len(raw) > MAX_BYTES:
            raise SourceError(f"input too large ({len(raw)} bytes; the limit is {MAX_BYTES})")
        text, encoding, bom, notebook = load(raw, path)
    except SourceError as exc:
        file_result.error = FileError(path, str(exc))
    else:
        source = SourceFile(path=path, text=text, encoding=encoding, bom=bom, mode=0, mtime_ns=0, size=len(raw),
                            digest=digest_bytes(raw), notebook=notebook)
        file_result = _guarded(path, lambda: (_check_source(source, path, settings, mode, write=False), None))[0]
    result.files.append(file_result)
    result.warnings.extend(file_result.warnings)
    result.warnings.extend(_suppression_warnings(file_result, settings))
    if mode.fix and file_result.error is None and file_result.fixed:
        try:
            return result, encode(source, file_result.source)
        except SourceError as exc:  # a notebook whose cells a fix could not be put back into
            file_result.error = FileError(path, str(exc))
    return result, raw


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use (containers, taskset)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _load_engine(settings: set[Settings]) -> None:
    """Imports the engine and resolves the active rules now: before forking, so workers inherit
    them instead of each doing it again; before _tune_gc, so they are frozen with the rest."""
    import trainlint.engine  # noqa: F401
    import trainlint.fixer  # noqa: F401

    for each in settings:
        each.active_rules()


# Generation-0 threshold for processes that only lint (pool workers; the CLI's own process with
# --jobs 1). Parsing allocates hundreds of thousands of nodes that all live until the file is
# done, so the default (700) collects over and over without freeing anything.
GC_THRESHOLD = 20000


def _tune_gc() -> None:
    """For a process that lints and exits: what is loaded now (libcst, the rules) stays for good,
    so move it out of the collector's sight (gc.freeze, which also keeps forked workers from
    copying those pages when a collection touches them), and collect less often."""
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


def _task(item: tuple[int, str, Settings, Mode]) -> tuple[int, FileResult, str | None]:
    index, path, settings, mode = item
    result, digest = _checked(path, settings, mode)
    return index, result, digest


def _file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _execute(work: list[tuple[int, str, Settings, Mode]], jobs: int, own_process: bool = False):
    """Yields (index, FileResult, digest) for every work item, in any order."""
    jobs = min(jobs, len(work))
    if jobs <= 1:
        if own_process and work:
            _load_engine({item[2] for item in work})
            _tune_gc()
        for item in work:
            yield _task(item)
        return
    # Biggest files first, so no worker is left with one large file at the end while the others
    # idle (the pool hands out shrinking lists, single files at the end).
    work = sorted(work, key=lambda item: _file_size(item[1]), reverse=True)
    _load_engine({item[2] for item in work})
    from trainlint.pool import run_tasks

    yield from run_tasks(_task, work, jobs, initializer=_tune_gc, lost=_lost)


def _lost(item: tuple[int, str, Settings, Mode], reason: str) -> tuple[int, FileResult, None]:
    """The result for a file whose worker process died while checking it (a crash in native
    code, the out-of-memory killer): an internal error for that file; the run goes on."""
    index, path, _settings, mode = item
    also = "; it may or may not have been fixed" if mode.fix else ""
    error = FileError(path, f"internal error: the worker process checking this file {reason}{also}; "
                            "please report this", internal=True)
    return index, FileResult(path=path, error=error), None


def _from_cache(cache, path: str, settings: Settings, mode: Mode) -> FileResult | None:
    try:
        source = read_source(path)
    except SourceError:
        return None  # the real check reports why
    hit = cache.get(path, source.digest, settings)
    if hit is None:
        return None
    diagnostics, error = hit
    if (mode.fix or mode.diff) and (diagnostics or error):
        return None  # fixes need the tree; only a file known to be clean can be skipped
    return FileResult(path=path, diagnostics=diagnostics, error=error, source=source.text)


def run(paths: list[str], resolver: SettingsResolver, mode: Mode = Mode(), force_exclude: bool = False,
        jobs: int | None = 1, cache=None, own_process: bool = False) -> RunResult:
    """jobs: worker processes (None: one per CPU; 1: no pool, the default for library callers,
    whose scripts may lack the `if __name__ == "__main__"` guard that spawn-based pools need).
    cache: a trainlint.cache.Cache, or None to neither read nor write one.
    own_process: the caller is a process that exits after this run (the CLI), so with one job the
    garbage collector may be tuned for it as it is in pool workers; a library caller's is left alone."""
    result = RunResult(fix_mode=mode.fix)
    files, missing = discover(paths, resolver, force_exclude, skipped=result.warnings)
    for path in missing:
        result.files.append(FileResult(path=path, error=FileError(path, "no such file or directory")))
    slots: list[FileResult | None] = [None] * len(files)
    settings_of = [resolver.for_path(path) for path in files]
    work = []
    for index, path in enumerate(files):
        if cache is not None:
            slots[index] = _from_cache(cache, path, settings_of[index], mode)
            if slots[index] is not None:
                continue
        work.append((index, path, settings_of[index], mode))
    # Only plain lint results are stored: after a fix the findings belong to another text.
    store = cache is not None and not (mode.fix or mode.diff)
    for index, file_result, digest in _execute(work, jobs or default_jobs(), own_process):
        slots[index] = file_result
        if store and digest is not None:
            cache.put(files[index], digest, settings_of[index], file_result.diagnostics, file_result.error)
    result.files.extend(slots)
    for file_result, settings in zip(slots, settings_of):
        result.warnings.extend(file_result.warnings)
        result.warnings.extend(_suppression_warnings(file_result, settings))
    return result


def _suppression_warnings(file_result: FileResult, settings: Settings) -> list[str]:
    """Warnings about the file's suppression comments that do not do what they look like (a
    file-level `# trainlint: noqa` after code, `# noqa TL101`), read from the text the run ended
    with, so a file answered from the cache is warned about too. None with --ignore-noqa."""
    if file_result.source is None or settings.ignore_noqa:
        return []
    text = file_result.source
    return [problem_warning(file_result.path, text, d, p) for d, p in problems(text)]
