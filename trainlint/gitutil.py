"""Small, quiet git helpers: the repository root and paths relative to it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def repo_root(cwd: str | os.PathLike | None = None) -> Path:
    """The git toplevel containing `cwd`, else `cwd` itself (SARIF paths are relative to it)."""
    here = Path(cwd or os.getcwd()).resolve()
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=here,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # git not installed
        return here
    if out.returncode == 0 and out.stdout.strip():
        return Path(out.stdout.strip()).resolve()
    return here


def relative_posix(path: str, root: Path) -> str:
    """`path` relative to `root` with forward slashes; absolute when it lies outside `root`.

    A symbolic link keeps its own name: the file is reported under the name the run found it by,
    as every other format does (following the link put a link to a file outside the checkout at
    that file's absolute path in SARIF and GitLab, and a broken one at its target). Only the
    folders on the way are resolved, for a run started in a folder reached through a link.
    Standard input ("-") has no path to make relative.
    """
    if path == "-":
        return path
    absolute = Path(os.path.abspath(path))  # `..` and `.` folded without following links
    for candidate in (absolute, absolute.parent.resolve() / absolute.name):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return absolute.as_posix()
