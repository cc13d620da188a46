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
    """`path` relative to `root` with forward slashes; absolute when it lies outside `root`."""
    p = Path(path)
    absolute = (p if p.is_absolute() else Path.cwd() / p).resolve()
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix()
