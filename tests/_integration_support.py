"""Shared helpers for the integration tests: hand-built diagnostics and the shared schemas."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from trainlint.diagnostics import Applicability, Diagnostic, Edit, FileResult, Fix, Location, RunResult
from trainlint.textpos import LineIndex

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = REPO_ROOT.parent / "shared" / "schemas"


def _main_checkout_schemas() -> Path | None:
    """In a git worktree, ../shared sits beside the main checkout rather than beside the worktree."""
    try:
        common = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=REPO_ROOT, capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return Path(common).parent.parent / "shared" / "schemas"


def location(source: str, offset: int) -> Location:
    index = LineIndex(source)
    row = 1
    for i, start in enumerate(index.starts):
        if start <= offset:
            row = i + 1
    if not index.starts:
        return Location(1, offset + 1)
    return Location(row, offset - index.starts[row - 1] + 1)


def diag(
    source: str,
    path: str,
    code: str,
    start: int,
    end: int,
    message: str = "a finding",
    edits: list[tuple[int, int, str]] | None = None,
    applicability: Applicability = Applicability.SAFE,
    name: str = "rule-name",
) -> Diagnostic:
    fix = None
    if edits is not None:
        fix = Fix(
            applicability,
            "apply the fix",
            tuple(Edit(s, e, c, location(source, s), location(source, e)) for s, e, c in edits),
        )
    return Diagnostic(
        code=code,
        name=name,
        message=message,
        path=path,
        start=location(source, start),
        end=location(source, end),
        start_offset=start,
        end_offset=end,
        fix=fix,
        url=f"https://trainlint.dev/rules/{code}",
    )


def result_of(files: dict[str, tuple[str, list[Diagnostic]]]) -> RunResult:
    return RunResult(files=[FileResult(path=p, diagnostics=d, source=s) for p, (s, d) in files.items()])


def schema_dir() -> Path:
    if SCHEMAS.is_dir():
        return SCHEMAS
    other = _main_checkout_schemas()
    if other is not None and other.is_dir():
        return other
    pytest.skip(f"shared schemas not found at {SCHEMAS} (expected ../shared/schemas beside the repo)")


def validator(schema_file: str):
    """A Draft 4 validator for one schema file, resolving $refs across the schema folder."""
    from jsonschema import Draft4Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT4

    root = schema_dir()
    resources = []
    for f in sorted(root.rglob("*.json")):
        contents = json.loads(f.read_text(encoding="utf-8"))
        resource = Resource.from_contents(contents, default_specification=DRAFT4)
        resources.append((f.relative_to(root).as_posix(), resource))
        if isinstance(contents, dict) and contents.get("id"):
            resources.append((contents["id"], resource))
    registry = Registry().with_resources(resources)
    schema = json.loads((root / schema_file).read_text(encoding="utf-8"))
    # Give the root schema a base URI so relative $refs between files resolve through the registry.
    schema = {**schema, "id": schema.get("id", schema_file)}
    return Draft4Validator(schema, registry=registry)


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "user.name", "Test")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit_all(path: Path, message: str = "commit") -> str:
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD").strip()
