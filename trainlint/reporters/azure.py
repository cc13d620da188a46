"""Azure Pipelines logging commands (`azure`): one `##vso[task.logissue ...]` line per finding and
per file that could not be checked, which the pipeline shows as errors on the run and the files.

Property values end at `;` and the message at the line's end, so both are escaped as the agent
unescapes them: `%` `\\r` `\\n` everywhere, and `;` `]` in property values. `sourcepath` is
relative to the repository root (the git toplevel, else the working directory), as in `github`.
"""

from __future__ import annotations

from pathlib import Path

from trainlint.diagnostics import RunResult
from trainlint.gitutil import relative_posix, repo_root
from trainlint.notebook import cell_maps, in_file, where


def _escape(text: str, in_property: bool = False) -> str:
    text = text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(";", "%3B").replace("]", "%5D") if in_property else text


def _issue(properties: list[tuple[str, object]], message: str) -> str:
    props = "".join(f"{k}={_escape(str(v), True)};" for k, v in properties)
    return f"##vso[task.logissue type=error;{props}]{_escape(message)}"


def render(result: RunResult, fmt: str = "azure", root: Path | None = None) -> str:
    root = (root or repo_root()).resolve()
    cells = cell_maps(result)  # a notebook's finding: its file's first line, the message says the cell
    lines = [
        _issue([("sourcepath", relative_posix(d.path, root)), ("linenumber", f.start.row),
                ("columnnumber", f.start.column), ("code", d.code)], f"{where(cells, d)}{d.message}")
        for d in result.diagnostics for f in [in_file(cells, d)]
    ]
    for error in result.errors:
        at = [("linenumber", error.location.row), ("columnnumber", error.location.column)] if error.location else []
        lines.append(_issue([("sourcepath", relative_posix(error.path, root)), *at],
                            f"could not check: {error.reason}"))
    return "".join(line + "\n" for line in lines)
