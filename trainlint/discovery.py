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


def _walk(directory: str, resolver: SettingsResolver, named_excluded: bool = False) -> list[str]:
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
        dirs[:] = sorted(d for d in dirs if not _excluded_folder(resolver, os.path.join(root, d), named_excluded))
        out.extend(os.path.join(root, f) for f in sorted(files))
    return out


def _excluded_folder(resolver: SettingsResolver, folder: str, named_excluded: bool = False) -> bool:
    # The settings of the folder's own files decide: a config file inside it applies to it.
    settings = resolver.for_directory(folder)
    return settings.excludes_entry(folder) if named_excluded else settings.is_excluded(folder)


def _shown(path: str) -> str:
    """The path as findings name it: normalised, and relative when it is absolute but inside the
    current folder (`trainlint $PWD/src` prints `src/train.py:3:1`, as Ruff does)."""
    path = os.path.normpath(path)
    if os.path.isabs(path):
        try:
            relative = os.path.relpath(path)
        except ValueError:  # another drive (Windows)
            return path
        if relative != ".." and not relative.startswith(".." + os.sep):
            return relative
    return path


def _excluded_below(resolver: SettingsResolver, folder: str, path: str) -> bool:
    """path, under a folder named on the command line that an exclude matches, is excluded by a
    pattern matching it or a folder between it and that folder (not the folder or those above)."""
    below = os.path.relpath(path, folder).split(os.sep)
    entries = [os.path.join(folder, *below[:i]) for i in range(1, len(below) + 1)]
    return any(resolver.for_path(entry).excludes_entry(entry) for entry in entries)


def discover(paths: list[str], resolver: SettingsResolver, force_exclude: bool = False,
             skipped: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(files to check, paths that do not exist). skipped, when given, receives a warning for each
    file a folder walk left out because it cannot be checked (a broken symbolic link)."""
    files: list[str] = []
    missing: list[str] = []
    seen: set[str] = set()
    for given in paths:
        if os.path.isdir(given):
            # A folder named on the command line is checked even if an exclude matches it (or a
            # folder above it), as a named file is, unless --force-exclude (Ruff's rule); the
            # excludes still apply to what is inside it, entry by entry.
            named_excluded = not force_exclude and resolver.for_directory(given).is_excluded(given)
            candidates = _git_files(given) if resolver.for_directory(given).respect_gitignore else None
            if candidates is None:
                candidates = _walk(given, resolver, named_excluded)
            for path in sorted(candidates):
                if not path.endswith(PYTHON_SUFFIXES) or not os.path.lexists(path):
                    continue
                path = _shown(path)
                if _dangling(path):
                    # An editor's lock file (Emacs' `.#a.py` -> `me@host.4242:...`) or a link to a
                    # file since removed: not a file anyone asked to check (named on the command
                    # line, it is still an error). It made the run fail with exit 2.
                    if skipped is not None:
                        skipped.append(f"warning: {path}: skipped: {_link_text(path)}")
                    continue
                if _excluded_below(resolver, given, path) if named_excluded else resolver.for_path(path).is_excluded(path):
                    continue
                if path not in seen:
                    seen.add(path)
                    files.append(path)
        elif os.path.lexists(given):
            # Files named explicitly are checked even if excluded, unless --force-exclude
            # (pre-commit passes every staged file by name).
            path = _shown(given)
            if force_exclude and resolver.for_path(path).is_excluded(path):
                continue
            if path not in seen:
                seen.add(path)
                files.append(path)
        else:
            missing.append(given)
    return _one_name_per_file(files), missing


def _dangling(path: str) -> bool:
    """A symbolic link whose target does not exist (or a loop of links)."""
    return os.path.islink(path) and not os.path.exists(path)


def _link_text(path: str) -> str:
    try:
        return f"broken symbolic link (to {os.readlink(path)})"
    except OSError:
        return "broken symbolic link"


def _one_name_per_file(files: list[str]) -> list[str]:
    """files with every file on disk named once: of the names that are one file (hard links,
    symlinks, the same file reached twice: same st_dev/st_ino after following links) only the
    first in sorted order is kept. Checking it under each name reported its findings twice, and
    with --fix the second name's fix found the file changed by the first's ("changed on disk
    since it was read", exit 2) or, through a symlink, counted fixes that were never written.
    A name that cannot be stat'ed (a dangling link, a loop) is kept: its check says why."""
    keys: list[tuple[int, int] | None] = []
    for path in files:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            keys.append(None)
        else:
            keys.append((st.st_dev, st.st_ino))
    name: dict[tuple[int, int], str] = {}
    for path, key in zip(files, keys):
        if key is not None and (key not in name or path < name[key]):
            name[key] = path
    return [path for path, key in zip(files, keys) if key is None or name[key] == path]
