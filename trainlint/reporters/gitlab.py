"""GitLab Code Quality (`gitlab`): the JSON array a merge request's code quality widget reads.

Each issue has GitLab's required fields: `description`, `check_name`, `fingerprint` (stable
across unrelated edits, the same one SARIF's partialFingerprints carry, so GitLab sees a finding
as the same issue in the base and the merge request), `severity` and `location` with a path
relative to the project root ($CI_PROJECT_DIR in a GitLab job, else the git toplevel) and the
finding's first and last lines. A file that could not be checked is a `critical` issue of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from trainlint.diagnostics import RunResult
from trainlint.fingerprint import fingerprints
from trainlint.gitutil import relative_posix, repo_root
from trainlint.notebook import cell_maps, in_file, where


def _root() -> Path:
    project = os.environ.get("CI_PROJECT_DIR")
    return Path(project).resolve() if project else repo_root()


def issues(result: RunResult, root: Path | None = None) -> list[dict]:
    root = (root or _root()).resolve()
    diags = result.diagnostics
    path_of = lambda p: relative_posix(p, root)  # noqa: E731 - used twice below
    cells = cell_maps(result)  # a notebook's finding: its file's first line, the description says the cell
    out = [
        {
            "description": f"{diag.code} {where(cells, diag)}{diag.message}",
            "check_name": f"trainlint/{diag.code}",
            "fingerprint": fp,
            "severity": "major",
            "location": {"path": path_of(diag.path), "lines": {"begin": placed.start.row, "end": placed.end.row}},
        }
        for diag, fp in zip(diags, fingerprints(diags, result.source_of, path_of))
        for placed in [in_file(cells, diag)]
    ]
    for error in result.errors:
        line = error.location.row if error.location else 1
        out.append({
            "description": f"could not check: {error.reason}",
            "check_name": "trainlint/file-error",
            "fingerprint": hashlib.sha256(f"file-error\0{path_of(error.path)}".encode()).hexdigest()[:32],
            "severity": "critical",
            "location": {"path": path_of(error.path), "lines": {"begin": line, "end": line}},
        })
    return out


def render(result: RunResult, fmt: str = "gitlab") -> str:
    return json.dumps(issues(result), indent=2, ensure_ascii=False) + "\n"
