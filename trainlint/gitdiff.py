"""What a change touched, from git: the changed files and, per file, the added/modified lines and
the lines a pull-request review comment may sit on.

The review compares the head against the merge base of base and head, as GitHub's pull-request
diff does ("three dots"). Lines are 1-based rows of the head version of each file.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from trainlint.textpos import split_lines

# GitHub diffs pull requests with three lines of context; comments may sit on any line of a hunk.
CONTEXT = 3
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


class GitError(Exception):
    """A git command that failed; the message says which and why."""


@dataclass
class ChangedFile:
    path: str  # relative to the repository root, forward slashes
    added: set[int] = field(default_factory=set)  # rows added or modified in the head version
    hunks: list[tuple[int, int]] = field(default_factory=list)  # inclusive head-side row ranges

    def hunk_of(self, row: int) -> tuple[int, int] | None:
        for lo, hi in self.hunks:
            if lo <= row <= hi:
                return lo, hi
        return None


def git(root: Path, *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-c", "core.quotePath=false", *args],
            cwd=root,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
        raise GitError(f"git {' '.join(args[:2])} failed: {err}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def resolve(root: Path, ref: str) -> str:
    """The commit id `ref` names; a clear error when it does not name one."""
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except GitError:
        pass
    # Outside a repository (or without git) every ref fails: git's own reason is the one to give.
    git(root, "rev-parse", "--git-dir")
    raise GitError(
        f"{ref!r} is not a commit in {root} (in a shallow CI checkout, fetch the base: "
        "actions/checkout with fetch-depth: 0)"
    )


def merge_base(root: Path, base: str, head: str) -> str:
    try:
        return git(root, "merge-base", base, head).strip()
    except GitError:
        raise GitError(
            f"{base!r} and {head!r} have no common ancestor in this clone (in CI, fetch full history: "
            "actions/checkout with fetch-depth: 0)"
        ) from None


def parse_hunks(patch: str, changed: ChangedFile) -> None:
    """Fill `changed` from one file's unified diff."""
    row = 0
    in_hunk = False
    for line in patch.splitlines():
        m = _HUNK.match(line)
        if m:
            start = int(m.group(1))
            count = int(m.group(2)) if m.group(2) is not None else 1
            if count:
                changed.hunks.append((start, start + count - 1))
            row = start
            in_hunk = True
            continue
        if not in_hunk or not line:
            continue
        tag = line[0]
        if tag == "+":
            changed.added.add(row)
            row += 1
        elif tag == " ":
            row += 1
        elif tag in "-\\":
            pass  # a removed line, or "\ No newline at end of file"
        else:
            in_hunk = False  # the next file's header


def changed_files(root: Path, base: str, head: str | None) -> list[ChangedFile]:
    """Files added, modified, renamed or copied between merge-base(base, head) and head (or the
    working tree, untracked files included, when head is None), with their changed rows."""
    base_id = resolve(root, base)
    head_id = resolve(root, head) if head is not None else resolve(root, "HEAD")
    since = merge_base(root, base_id, head_id)
    target = [head_id] if head is not None else []
    listing = git(root, "diff", "--name-status", "-z", "-M", "--diff-filter=ACMR", since, *target, "--")
    fields = listing.split("\0")
    out = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[0] in "RC":
            old, new = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old = new = fields[i + 1]
            i += 2
        changed = ChangedFile(path=new)
        pathspec = [old, new] if old != new else [new]
        patch = git(root, "diff", f"-U{CONTEXT}", "-M", "--no-color", "--no-ext-diff", since, *target, "--", *pathspec)
        parse_hunks(patch, changed)
        if changed.added:
            out.append(changed)
    if head is None:
        # New files not yet added to git are part of the working tree's change too.
        for name in git(root, "ls-files", "--others", "--exclude-standard", "-z").split("\0"):
            if not name:
                continue
            try:
                with open(root / name, "rb") as fh:
                    rows = len(split_lines(fh.read().decode("utf-8", "replace")))
            except OSError:
                continue
            if rows:
                out.append(ChangedFile(path=name, added=set(range(1, rows + 1)), hunks=[(1, rows)]))
    return out
