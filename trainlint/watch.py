"""`trainlint check --watch`: check, then check again whenever a file that could change the
outcome changes (a Python file or notebook under the paths, or a configuration file there or in
a folder above), until Ctrl-C.

Each check is a fresh `trainlint check` process with the same arguments (minus --watch), so a
run sees configuration edits and new files exactly as a one-off run would, and the cache makes
the files that did not change cost nothing. Changes are found by polling modification times:
no dependency, and the same on every platform.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

POLL_SECONDS = 0.5
WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb")
CONFIG_NAMES = ("pyproject.toml", "trainlint.toml", ".trainlint.toml")
# Folders whose files never change a check: tools' own state, environments, version control.
SKIPPED_FOLDERS = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".trainlint_cache",
                   ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox"}


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def snapshot(paths: list[str]) -> dict[str, tuple[int, int] | None]:
    """Modification stamps of every file that could change a check of `paths`."""
    seen: dict[str, tuple[int, int] | None] = {}
    folders = {os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".") for p in paths}
    for folder in folders | {os.getcwd()}:
        while True:  # configuration files of the folder and every folder above it
            for name in CONFIG_NAMES:
                config = os.path.join(folder, name)
                seen[config] = _stamp(config)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    for given in paths:
        if not os.path.isdir(given):
            seen[os.path.abspath(given)] = _stamp(given)
            continue
        for root, dirs, files in os.walk(given):
            dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS]
            for name in files:
                if name.endswith(WATCHED_SUFFIXES) or name in CONFIG_NAMES:
                    path = os.path.abspath(os.path.join(root, name))
                    seen[path] = _stamp(path)
    return seen


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def watch_command(paths: list[str], args: list[str], poll: float = POLL_SECONDS) -> int:
    """Run `trainlint ARGS` now and after every change under `paths`; 0 on Ctrl-C."""
    _say("Starting trainlint in watch mode...")
    try:
        # The stamps are taken before each run: a file saved while it runs is a change, and so is
        # what --fix writes (the next run then finds nothing to fix, and the loop settles).
        last = snapshot(paths)
        while True:
            subprocess.run([sys.executable, "-m", "trainlint", *args])
            while True:
                time.sleep(poll)
                now = snapshot(paths)
                if now != last:
                    changed = sorted(p for p in now.keys() | last.keys() if now.get(p) != last.get(p))
                    _say(f"File change detected: {os.path.relpath(changed[0])}"
                         + (f" and {len(changed) - 1} more" if len(changed) > 1 else ""))
                    last = now
                    break
    except KeyboardInterrupt:
        return 0
