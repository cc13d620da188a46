"""The values that flow out of the engine: diagnostics, fixes and their text edits.

Everything downstream (fixer, reporters, review, baseline) consumes these and nothing else.
Offsets are character offsets into the decoded source text; rows and columns are 1-based
(columns count characters, as Ruff's JSON does). Reporters that need other units (rdjson's
UTF-8 byte columns) convert from the source text.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

_AT_LINE = re.compile(r"\bline (\d+), column (\d+)")


class Applicability(str, enum.Enum):
    """How sure a fix is to keep behaviour (Ruff's convention)."""

    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # applied only with --unsafe-fixes
    DISPLAY_ONLY = "display-only"  # shown (diff, suggestion), never written

    def allowed(self, unsafe_fixes: bool) -> bool:
        if self is Applicability.SAFE:
            return True
        if self is Applicability.UNSAFE:
            return unsafe_fixes
        return False


@dataclass(frozen=True, order=True)
class Location:
    row: int  # 1-based
    column: int  # 1-based, in characters


@dataclass(frozen=True)
class Edit:
    """Replace source[start:end] with content."""

    start: int
    end: int
    content: str
    start_loc: Location
    end_loc: Location


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]
    # The fix finishes what an earlier fix of the same rule began (TL401 removing the import its
    # rewrites left unused): not counted as a finding fixed unless it was there before any fix.
    follow_up: bool = False

    def note(self) -> str:
        """The fix in one sentence with how sure it is and what applies it, for the outputs that
        show a fix as a suggestion to accept (review comments, reviewdog): the suggestion block
        itself cannot say that an unsafe fix may change behaviour."""
        what = self.message.rstrip(".")
        if self.applicability is Applicability.SAFE:
            return f"Fix (safe, applied by `trainlint check --fix`): {what}."
        if self.applicability is Applicability.UNSAFE:
            return (
                f"Fix (unsafe: may change behaviour, review before committing; applied by "
                f"`trainlint check --fix --unsafe-fixes`): {what}."
            )
        return f"Suggested change (never applied automatically): {what}."


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    path: str
    start: Location
    end: Location
    start_offset: int
    end_offset: int
    fix: Fix | None = None
    url: str = ""
    # Set by the fixer when the diagnostic's fix was written to disk.
    fixed: bool = field(default=False, compare=False)

    def sort_key(self) -> tuple:
        return (self.path, self.start.row, self.start.column, self.code)

    def fixable(self, unsafe_fixes: bool) -> bool:
        """Whether --fix (with the --unsafe-fixes given) writes this finding's fix."""
        return self.fix is not None and bool(self.fix.edits) and self.fix.applicability.allowed(unsafe_fixes)


@dataclass
class FileError:
    """A file that could not be checked (or fixed), with the reason a person can act on."""

    path: str
    reason: str
    # A bug in trainlint (an unexpected exception), not a problem with the file: the ecosystem
    # sweep counts these, and the message asks for a report.
    internal: bool = False

    def __str__(self) -> str:
        return f"{self.path}: error: {self.reason}"

    @property
    def location(self) -> Location | None:
        """Where in the file, for a syntax error ("... at line N, column M: ..."); None otherwise.
        Read from the reason, so a cached error (kept as its text) has it too."""
        m = _AT_LINE.search(self.reason)
        return Location(int(m.group(1)), max(int(m.group(2)), 1)) if m else None


@dataclass
class FileResult:
    """Everything one file contributed to a run."""

    path: str  # as given/discovered (relative to the working directory when possible)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: FileError | None = None
    # The text the diagnostics' offsets refer to (after fixes, when fixes were applied).
    source: str | None = None
    fixed: int = 0  # number of fixes written for this file (with --diff: that would be written)
    applied: list[Diagnostic] = field(default_factory=list)  # the findings those fixes removed
    diff: str = ""  # unified diff (with --diff)
    # --fix with --baseline: (recorded fingerprint, new fingerprint, line) of each recorded finding
    # whose line the fixes rewrote, for the CLI to write back to the baseline file.
    baseline_moves: list[tuple[str, str, int]] = field(default_factory=list)
    # Lines for standard error about this file (a fix left out because it broke the code).
    warnings: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)
    fix_mode: bool = False
    fix_only: bool = False  # --fix-only: leftover findings were dropped; the summary counts the fixes
    show_fixes: bool = False
    statistics: bool = False
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes count as available, like safe ones
    diff_mode: bool = False  # --diff: the report is the diffs; the summary goes to standard error
    quiet: bool = False  # -q: the text report leaves out its summary lines
    # Lines for standard error that are not findings nor errors: files a folder walk skipped,
    # suppression comments that do not do what they look like (trainlint.suppressions.problems).
    warnings: list[str] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        out = [d for f in self.files for d in f.diagnostics]
        out.sort(key=Diagnostic.sort_key)
        return out

    @property
    def errors(self) -> list[FileError]:
        return [f.error for f in self.files if f.error is not None]

    @property
    def fixed(self) -> int:
        return sum(f.fixed for f in self.files)

    def source_of(self, path: str) -> str | None:
        for f in self.files:
            if f.path == path:
                return f.source
        return None
