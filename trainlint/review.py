"""`trainlint review`: lint what a change touched and review it like a colleague would.

Findings are kept when they touch a line the change added or modified. Each becomes a
pull-request review comment on the finding's lines, with a ```suggestion block when the fix fits
those lines exactly (GitHub replaces the commented lines with the block's content). Every comment
carries a hidden fingerprint, so posting again on the same pull request skips findings that are
already commented on, even after the lines moved.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import click

from trainlint.cli import SuggestingChoice, selectors  # the same checks as `check`
from trainlint.diagnostics import Diagnostic, FileError, FileResult, RunResult
from trainlint.fingerprint import fingerprints
from trainlint.gitdiff import ChangedFile, GitError, changed_files, git
from trainlint.gitutil import relative_posix, repo_root
from trainlint.github_api import DEFAULT_API_URL, GitHubClient, GitHubError
from trainlint.textpos import line_range, whole_line_replacement

# Notebooks are checked by `check`, not reviewed: a finding in a cell has no row of the JSON diff to
# carry a comment or a suggestion.
REVIEWED_SUFFIXES = (".py", ".pyi")
REVIEW_MARKER = "<!-- trainlint:review -->"
_FINDING_MARKER = "<!-- trainlint:finding {} -->"
_FINDING_RE = re.compile(r"<!-- trainlint:finding ([0-9a-f]{16,64}) -->")


class ReviewError(click.ClickException):
    """A user-facing failure (git, GitHub, configuration): one line, exit status 2."""

    exit_code = 2

    def format_message(self) -> str:
        return self.message

    def show(self, file=None) -> None:
        click.echo(f"trainlint review: error: {self.format_message()}", err=True)


@dataclass
class Kept:
    diag: Diagnostic
    path: str  # relative to the repository root, as GitHub names files
    fingerprint: str
    changed: ChangedFile


# -- selecting findings ------------------------------------------------------------------------


def keep_changed(result: RunResult, changes: list[ChangedFile], root: Path) -> list[Kept]:
    """Findings that touch an added or modified line, with their repository paths and fingerprints."""
    by_path = {c.path: c for c in changes}
    diags = result.diagnostics
    rel = {d.path: relative_posix(d.path, root) for d in diags}
    prints = fingerprints(diags, result.source_of, lambda p: rel[p])
    kept = []
    for diag, fp in zip(diags, prints):
        changed = by_path.get(rel[diag.path])
        if changed is None:
            continue
        first, last = line_range(diag)
        if any(row in changed.added for row in range(first, last + 1)):
            kept.append(Kept(diag, rel[diag.path], fp, changed))
    return kept


def filtered_result(result: RunResult, kept: list[Kept]) -> RunResult:
    """`result` holding only the kept findings (for the rdjson/sarif/github outputs)."""
    ids = {id(k.diag) for k in kept}
    files = [
        FileResult(path=f.path, diagnostics=[d for d in f.diagnostics if id(d) in ids], error=f.error, source=f.source)
        for f in result.files
    ]
    return RunResult(files=files)


# -- building the review -----------------------------------------------------------------------


def _fence(text: str) -> str:
    """A code fence longer than any backtick run inside `text`, so the block can't end early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def suggestion(kept: Kept, source: str | None) -> str | None:
    """The ```suggestion block's text: the finding's lines as its fix leaves them, when the diff
    shows all of them and the fix stays within them (GitHub replaces exactly the commented lines)."""
    diag = kept.diag
    if diag.fix is None or source is None:
        return None
    first, last = line_range(diag)
    hunk = kept.changed.hunk_of(first)
    if hunk is None or not hunk[0] <= last <= hunk[1]:
        return None
    replacement = whole_line_replacement(source, diag)
    return None if replacement is None else replacement[2]


def comment_for(kept: Kept, source: str | None) -> dict:
    """One review comment: on the finding's lines when the diff shows them all, else on its first
    changed line (GitHub only accepts comments on lines of the diff's hunks)."""
    diag = kept.diag
    first, last = line_range(diag)
    hunk = kept.changed.hunk_of(first)
    whole = hunk is not None and hunk[0] <= last <= hunk[1]
    if not whole:
        first = last = min(row for row in range(first, last + 1) if row in kept.changed.added)

    parts = [f"**{diag.code}** `{diag.name}`: {diag.message}"]
    if diag.fix is not None:
        text = suggestion(kept, source)
        if text is not None:
            fence = _fence(text)
            parts.append(f"{fence}suggestion\n{text}\n{fence}")
        parts.append(diag.fix.note())
    if diag.url:
        parts.append(f"[{diag.code} documentation]({diag.url})")
    parts.append(_FINDING_MARKER.format(kept.fingerprint))

    comment: dict = {"path": kept.path, "body": "\n\n".join(parts), "line": last, "side": "RIGHT"}
    if first != last:
        comment["start_line"] = first
        comment["start_side"] = "RIGHT"
    return comment


def summary(kept: list[Kept], errors: list[FileError], root: Path, already: int = 0,
            suggested: int = 0) -> str:
    """The review's body; `suggested`: how many of the comments carry a ```suggestion block."""
    lines = [REVIEW_MARKER, "### trainlint"]
    new = len(kept) - already
    if not kept:
        lines.append("No findings on the lines this change adds or modifies.")
    else:
        # Counted as the comments show them: "7 with a suggested fix" was said of 4 suggestion
        # blocks, the other 3 fixes reaching outside the commented lines (described only).
        described = sum(1 for k in kept if k.diag.fix is not None) - suggested
        lines.append(
            f"{len(kept)} finding{'s' if len(kept) != 1 else ''} on lines this change adds or modifies"
            f" ({suggested} with a suggested change"
            + (f"; {described} more with a fix described in the comment" if described else "") + ")."
        )
        if already:
            lines.append(f"{new} new; {already} already commented on in an earlier review.")
        counts = Counter((k.diag.code, k.diag.name) for k in kept)
        lines += ["", "| rule | findings |", "|---|---|"]
        lines += [f"| {code} `{name}` | {n} |" for (code, name), n in sorted(counts.items())]
    if errors:
        lines += ["", "Files that could not be checked:"]
        lines += [f"- `{relative_posix(e.path, root)}`: {e.reason}" for e in errors]
    return "\n".join(lines)


def build_review(result: RunResult, kept: list[Kept], root: Path, commit_id: str, already: int = 0) -> dict:
    """The body of POST /repos/{owner}/{repo}/pulls/{number}/reviews."""
    comments = [comment_for(k, result.source_of(k.diag.path)) for k in kept]
    suggested = sum(1 for k in kept if suggestion(k, result.source_of(k.diag.path)) is not None)
    return {
        "commit_id": commit_id,
        "body": summary(kept, result.errors, root, already, suggested),
        "event": "COMMENT",
        "comments": comments,
    }


# -- linting the changed files -----------------------------------------------------------------


def lint_changes(root: Path, changes: list[ChangedFile], head: str | None, config: str | None,
                 overrides: dict | None = None, inline: tuple[str, ...] = ()) -> RunResult:
    """Lint the changed Python files as they are at `head` (the working tree when head is None).
    Configuration comes from the working tree (with `overrides`: --select and co., and `inline`
    `key = value` pairs of --config); excluded files are skipped."""
    from trainlint.api import lint_source
    from trainlint.config import ConfigError, SettingsResolver
    from trainlint.engine import ParseError
    from trainlint.source import SourceError, decode, read_source

    try:
        resolver = SettingsResolver(config, overrides, inline)
    except ConfigError as exc:
        raise ReviewError(str(exc)) from None
    result = RunResult()
    for changed in changes:
        if not changed.path.endswith(REVIEWED_SUFFIXES):
            continue
        absolute = root / changed.path
        path = os.path.relpath(absolute)
        if path.startswith(".."):
            path = str(absolute)
        try:
            settings = resolver.for_path(path)
        except ConfigError as exc:
            raise ReviewError(str(exc)) from None
        if settings.is_excluded(path):
            continue
        file_result = FileResult(path=path)
        result.files.append(file_result)
        try:
            if head is None:
                text = read_source(path).text
            else:
                raw = git(root, "show", f"{head}:{changed.path}").encode("utf-8", "surrogateescape")
                text = decode(raw, path)[0]
            file_result.source = text
            file_result.diagnostics = lint_source(text, path=path, settings=settings)
        except (SourceError, ParseError, GitError) as exc:
            file_result.error = FileError(path, str(exc))
        except RecursionError:
            file_result.error = FileError(path, "too deeply nested to analyse")
    return result


# -- posting -----------------------------------------------------------------------------------


def posted_fingerprints(comments: list[dict]) -> set[str]:
    found = set()
    for comment in comments:
        found.update(_FINDING_RE.findall(comment.get("body") or ""))
    return found


def post_review(
    client: GitHubClient, repo: str, number: int, result: RunResult, kept: list[Kept], root: Path, commit_id: str
) -> tuple[dict | None, dict]:
    """Post the findings not yet commented on. Returns (GitHub's review or None if nothing was new,
    the review that was (or would have been) sent)."""
    existing = posted_fingerprints(client.review_comments(repo, number))
    new = [k for k in kept if k.fingerprint not in existing]
    review = build_review(result, kept, root, commit_id, already=len(kept) - len(new))
    review["comments"] = [comment_for(k, result.source_of(k.diag.path)) for k in new]
    if not new:
        return None, review
    return client.create_review(repo, number, review), review


# -- the command -------------------------------------------------------------------------------


def _event() -> dict:
    """The Actions event payload, when running in GitHub Actions."""
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise ReviewError(f"{path} (GITHUB_EVENT_PATH): cannot read the event payload: {exc}") from None
    return data if isinstance(data, dict) else {}


def _review_formats() -> list[str]:
    from trainlint.reporters import FORMATS

    return ["review", *sorted(FORMATS)]


@click.command("review", short_help="Review a change: findings on the lines it touched, for GitHub.")
@click.option("--base", "base", metavar="REF", help="Compare against the merge base with this ref "
              "(default in Actions: the pull request's base commit).")
@click.option("--head", "head", metavar="REF", help="The reviewed revision (default: the working tree; with "
              "--post, the commit the comments refer to).")
@click.option("--post", is_flag=True, help="Post the review to GitHub (needs GITHUB_TOKEN).")
@click.option("--repo", metavar="OWNER/NAME", help="Repository to post to (default: $GITHUB_REPOSITORY).")
@click.option("--pr", "pr_number", type=int, metavar="N", help="Pull request number (default: from $GITHUB_EVENT_PATH).")
@click.option("--commit", "commit_id", metavar="SHA", help="Commit the comments refer to "
              "(default: the pull request's head commit in Actions, else the reviewed revision).")
@click.option("--output-format", type=SuggestingChoice(_review_formats()), default="review", show_default=True,
              help="review: the pull-request review as JSON; or any `check` format for the kept findings.")
@click.option("--config", "config_args", multiple=True, metavar="PATH | KEY=VALUE",
              help="A configuration file to use for every file, or a TOML `key = value` pair set on top of each "
                   "file's configuration; may be repeated (as `check --config`).")
@click.option("--select", multiple=True, callback=selectors, help="Rule codes or prefixes to enable (ALL for all).")
@click.option("--extend-select", multiple=True, callback=selectors, help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, callback=selectors, help="Rule codes or prefixes to disable.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are kept or a file could not be checked.")
def review_command(base, head, post, repo, pr_number, commit_id, output_format, config_args, select, extend_select,
                   ignore, exit_zero):
    """Lint what a change touched and write (or --post) a GitHub pull-request review."""
    from trainlint.cli import config_arguments

    config_path, inline = config_arguments(config_args)
    event = _event()
    pull = event.get("pull_request") if isinstance(event.get("pull_request"), dict) else {}
    base = base or (pull.get("base") or {}).get("sha")
    if not base:
        raise click.UsageError("--base REF is required (outside a GitHub Actions pull_request event).")
    root = repo_root()
    if post and head is None:
        # Comments are placed on the lines of a commit: the working tree's lines were posted
        # against HEAD's sha, so an uncommitted edit above a finding put its comment (and its
        # one-click suggestion) on another line, and untracked files got comments GitHub refuses.
        head = commit_id or (pull.get("head") or {}).get("sha") or "HEAD"
        if _uncommitted(root):
            click.echo(f"trainlint review: --post reviews {head} as committed; the working tree's "
                       "uncommitted changes are not part of it.", err=True)
    try:
        changes = changed_files(root, base, head)
        head_commit = git(root, "rev-parse", "--verify", f"{head or 'HEAD'}^{{commit}}").strip()
    except GitError as exc:
        raise ReviewError(str(exc)) from None
    result = lint_changes(root, changes, head, config_path,
                          {"select": select, "extend_select": extend_select, "ignore": ignore}, inline)
    kept = keep_changed(result, changes, root)
    commit_id = commit_id or (pull.get("head") or {}).get("sha") or head_commit

    if post:
        token = os.environ.get("GITHUB_TOKEN")
        if not token:
            raise ReviewError("--post needs a token in the GITHUB_TOKEN environment variable")
        repo = repo or os.environ.get("GITHUB_REPOSITORY")
        if not repo or repo.count("/") != 1:
            raise ReviewError("--post needs --repo OWNER/NAME (or $GITHUB_REPOSITORY)")
        number = pr_number or pull.get("number")
        if not isinstance(number, int):
            raise ReviewError("--post needs --pr N (or a pull_request event in $GITHUB_EVENT_PATH)")
        client = GitHubClient(token, os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL)
        try:
            posted, sent = post_review(client, repo, number, result, kept, root, commit_id)
        except GitHubError as exc:
            raise ReviewError(str(exc)) from None
        if posted is None:
            click.echo(f"trainlint review: nothing new to post on {repo}#{number} "
                       f"({len(kept)} finding(s) already commented on).", err=True)
        else:
            where = posted.get("html_url") or f"{repo}#{number}"
            click.echo(f"trainlint review: posted {len(sent['comments'])} comment(s): {where}", err=True)
    elif output_format == "review":
        review = build_review(result, kept, root, commit_id)
        click.echo(json.dumps(review, indent=2, ensure_ascii=False))
    else:
        from trainlint.reporters import render

        sys.stdout.write(click.unstyle(render(output_format, filtered_result(result, kept))))

    for error in result.errors:
        click.echo(str(error), err=True)
    if exit_zero:  # as `check --exit-zero`: findings and files that could not be checked alike
        sys.exit(0)
    sys.exit(2 if result.errors else 1 if kept else 0)


def _uncommitted(root: Path) -> bool:
    """Whether the working tree differs from HEAD (changed or untracked files)."""
    try:
        return bool(git(root, "status", "--porcelain", "--untracked-files=normal").strip())
    except GitError:
        return False
