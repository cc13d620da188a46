"""SARIF 2.1.0, the format GitHub code scanning (and most security dashboards) ingest.

Paths are relative to the repository root (git toplevel, else the working directory) under the
%SRCROOT% base id, so uploads from any checkout location line up with the repository's files.
Columns count Unicode code points (our character columns), which run.columnKind declares; SARIF's
default would be UTF-16 code units.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

import trainlint
from trainlint.diagnostics import Diagnostic, RunResult
from trainlint.fingerprint import fingerprints
from trainlint.gitutil import relative_posix, repo_root
from trainlint.notebook import cell_maps, in_file, where

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/trainlint/trainlint"
FINGERPRINT_KEY = "trainlint/v1"


def _rule_metadata() -> dict[str, dict]:
    """Rule descriptions from the registry; empty when the registry is unavailable, in which case
    rules are described from the findings alone."""
    try:
        from trainlint.registry import RegistryError, all_rules

        rules = all_rules()
    except ImportError:
        return {}
    except RegistryError:
        # A broken third-party pack was already reported by the run; the report still goes out.
        return {}
    out = {}
    for rule in rules:
        url = getattr(rule, "url", "")
        if callable(url):  # a classmethod on the Rule base class
            url = url()
        out[rule.code] = {
            "name": getattr(rule, "name", rule.code),
            "summary": getattr(rule, "summary", "") or "",
            "docs": getattr(rule, "docs", "") or "",
            "url": url or "",
        }
    return out


def _first_paragraph(markdown: str) -> str:
    """The docs' first prose paragraph, headings skipped: SARIF's fullDescription is plain text."""
    para: list[str] = []
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if para:
                break
            continue
        if not stripped:
            if para:
                break
            continue
        para.append(stripped)
    return " ".join(para)


def _plain(markdown: str) -> str:
    """The rule's Markdown documentation as the plain text SARIF's `help.text` is read as (the
    Markdown itself goes in `help.markdown`): no fences, heading marks, backticks or emphasis."""
    lines = []
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            continue
        line = re.sub(r"^#+\s*", "", line)
        lines.append(line.replace("`", "").replace("**", ""))
    return "\n".join(lines)


def _rule_entry(code: str, meta: dict | None, example: Diagnostic | None) -> dict:
    name = (meta or {}).get("name") or (example.name if example else code)
    summary = (meta or {}).get("summary") or (example.message if example else name)
    docs = (meta or {}).get("docs") or ""
    url = (meta or {}).get("url") or (example.url if example else "")
    full = _first_paragraph(docs) or summary
    entry: dict = {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": full},
        "help": {"text": _plain(docs or summary), "markdown": docs or summary},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["performance", "pytorch"]},
    }
    if url:
        entry["helpUri"] = url
    return entry


def _uri(path: str, root: Path) -> str:
    # A name that is not UTF-8 (its bytes kept as surrogates) is written as those bytes
    # percent-encoded, as Path.as_uri writes it; quote's strict UTF-8 crashed the report.
    return quote(relative_posix(path, root), safe="/", errors="surrogateescape")


def _region(start_row: int, start_col: int, end_row: int, end_col: int) -> dict:
    return {"startLine": start_row, "startColumn": start_col, "endLine": end_row, "endColumn": end_col}


def _artifact(path: str, root: Path) -> dict:
    rel = relative_posix(path, root)
    if rel.startswith("/"):
        # Outside the repository: an absolute file URI, with no base id.
        return {"uri": Path(rel).as_uri()}
    if rel == "-":
        return {"uri": "-"}  # standard input without --stdin-filename: no file under the root
    return {"uri": _uri(path, root), "uriBaseId": "%SRCROOT%"}


def _fix(diag: Diagnostic, root: Path) -> dict:
    assert diag.fix is not None
    replacements = []
    for edit in sorted(diag.fix.edits, key=lambda e: e.start):
        replacements.append(
            {
                "deletedRegion": _region(
                    edit.start_loc.row, edit.start_loc.column, edit.end_loc.row, edit.end_loc.column
                ),
                "insertedContent": {"text": edit.content},
            }
        )
    return {
        "description": {"text": f"{diag.fix.message} ({diag.fix.applicability.value} fix)"},
        "artifactChanges": [{"artifactLocation": _artifact(diag.path, root), "replacements": replacements}],
    }


def build(result: RunResult, root: Path | None = None) -> dict:
    root = (root or repo_root()).resolve()
    diags = result.diagnostics
    meta = _rule_metadata()
    examples: dict[str, Diagnostic] = {}
    for diag in diags:
        examples.setdefault(diag.code, diag)
    codes = sorted(set(meta) | set(examples))
    rules = [_rule_entry(code, meta.get(code), examples.get(code)) for code in codes]
    rule_index = {code: i for i, code in enumerate(codes)}
    prints = fingerprints(diags, result.source_of, lambda p: relative_posix(p, root))

    results = []
    cells = cell_maps(result)  # a notebook's finding: its file's first line, no fix, the message says the cell
    for found, fp in zip(diags, prints):
        diag = in_file(cells, found)
        item: dict = {
            "ruleId": diag.code,
            "ruleIndex": rule_index[diag.code],
            "level": "error",
            "message": {"text": where(cells, found) + diag.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _artifact(diag.path, root),
                        "region": _region(diag.start.row, diag.start.column, diag.end.row, diag.end.column),
                    }
                }
            ],
            "partialFingerprints": {FINGERPRINT_KEY: fp},
        }
        if diag.fix is not None and diag.fix.edits:
            item["fixes"] = [_fix(diag, root)]
        results.append(item)

    notifications = [
        {
            "level": "error",
            "message": {"text": f"{err.path}: {err.reason}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(err.path, root),
                **({"region": {"startLine": err.location.row, "startColumn": err.location.column}}
                   if err.location else {}),
            }}],
        }
        for err in result.errors
    ]
    run: dict = {
        "tool": {
            "driver": {
                "name": "trainlint",
                "version": trainlint.__version__,
                "semanticVersion": trainlint.__version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
        "invocations": [
            {
                # SARIF 2.1.0 (3.20.14): false when the tool failed to analyze some input. A file
                # that could not be read or parsed was not analyzed (and the run exits 2), so a
                # dashboard must not show the run as a clean, complete one.
                "executionSuccessful": not result.errors,
                "toolExecutionNotifications": notifications,
            }
        ],
        "results": results,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(result: RunResult, fmt: str = "sarif") -> str:
    return json.dumps(build(result), indent=2, ensure_ascii=False) + "\n"
