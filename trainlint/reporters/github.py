"""GitHub Actions workflow commands: one `::error` annotation per finding and per unreadable file.

GitHub parses `::error key=value,...::message` lines from a step's output. The message and the
property values are escaped as the runner unescapes them: '%', CR and LF in both, and also ':' and
',' in property values, where they would otherwise end the value.

`file` is relative to the repository root (the git toplevel, else the working directory), as the
runner reads a relative path: relative to the current folder, a job with `working-directory:`
annotated files that do not exist. A file outside the repository keeps its absolute path, which
the runner makes relative to the repository that holds it.
"""

from __future__ import annotations

from pathlib import Path

from trainlint.diagnostics import RunResult
from trainlint.gitutil import relative_posix, repo_root
from trainlint.notebook import cell_maps, in_file, where


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(properties: list[tuple[str, object]], message: str) -> str:
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties)
    return f"::error {props}::{escape_data(message)}"


def render(result: RunResult, fmt: str = "github", root: Path | None = None) -> str:
    root = (root or repo_root()).resolve()
    lines = []
    cells = cell_maps(result)  # a notebook's finding: its file's first line, the message says the cell
    for found in result.diagnostics:
        diag = in_file(cells, found)
        props: list[tuple[str, object]] = [
            ("file", relative_posix(diag.path, root)),
            ("line", diag.start.row),
            ("col", diag.start.column),
            ("endLine", diag.end.row),
            ("endColumn", diag.end.column),
            ("title", diag.code),
        ]
        lines.append(_command(props, f"{diag.code} {where(cells, found)}{diag.message}"))
    for error in result.errors:
        at = [("line", error.location.row), ("col", error.location.column)] if error.location else []
        lines.append(_command([("file", relative_posix(error.path, root)), *at, ("title", "trainlint")],
                              f"could not check: {error.reason}"))
    return "".join(line + "\n" for line in lines)
