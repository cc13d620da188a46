"""Which files a run checks: Python files under the given paths, honouring .gitignore (through
git itself, when the folder is in a work tree), the configured excludes, and --force-exclude.
"""

from __future__ import annotations

import os
import subprocess

from trainlint.config import SettingsResolver

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks: trainlint/notebook.py


def _git_files(directory: str) -> list[str] | None:
    """Tracked and untracked-but-not-ignored files under directory, or None outside a git work tree."""
    try:
        proc = subprocess.run(
            ["git", "-C", directory, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [os.path.join(directory, n) for n in names]


def _walk(directory: str, resolver: SettingsResolver) -> list[str]:
    out = []
    seen_dirs: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(directory, followlinks=True):
        try:
            st = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:  # a symlink loop
            dirs[:] = []
            continue
        seen_dirs.add(key)
        dirs[:] = sorted(d for d in dirs if not _excluded_folder(resolver, os.path.join(root, d)))
        out.extend(os.path.join(root, f) for f in sorted(files))
    return out


def _excluded_folder(resolver: SettingsResolver, folder: str) -> bool:
    # The settings of the folder's own files decide: a config file inside it applies to it.
    return resolver.for_directory(folder).is_excluded(folder)


def discover(paths: list[str], resolver: SettingsResolver, force_exclude: bool = False) -> tuple[list[str], list[str]]:
    """(files to check, paths that do not exist)."""
    files: list[str] = []
    missing: list[str] = []
    seen: set[str] = set()
    for given in paths:
        if os.path.isdir(given):
            candidates = _git_files(given) if resolver.for_directory(given).respect_gitignore else None
            if candidates is None:
                candidates = _walk(given, resolver)
            for path in sorted(candidates):
                if not path.endswith(PYTHON_SUFFIXES) or not os.path.lexists(path):
                    continue
                path = os.path.normpath(path)
                if resolver.for_path(path).is_excluded(path):
                    continue
                if path not in seen:
                    seen.add(path)
                    files.append(path)
        elif os.path.lexists(given):
            # Files named explicitly are checked even if excluded, unless --force-exclude
            # (pre-commit passes every staged file by name).
            path = os.path.normpath(given)
            if force_exclude and resolver.for_path(path).is_excluded(path):
                continue
            if path not in seen:
                seen.add(path)
                files.append(path)
        else:
            missing.append(given)
    return files, missing
