"""Ruff-compatible JSON (`json`: one array) and JSON Lines (`json-lines`: one object per line)."""

from __future__ import annotations

import json
import os

from trainlint.diagnostics import Diagnostic, FileError, RunResult
from trainlint.notebook import CellMap, cell_maps
from trainlint.source import STDIN_NAME


def _loc(loc) -> dict:
    return {"row": loc.row, "column": loc.column}


def diagnostic_dict(diag: Diagnostic) -> dict:
    fix = None
    if diag.fix is not None:
        fix = {
            "applicability": diag.fix.applicability.value,
            "message": diag.fix.message,
            "edits": [
                {"content": e.content, "location": _loc(e.start_loc), "end_location": _loc(e.end_loc)}
                for e in diag.fix.edits
            ],
        }
    return {
        "cell": None,  # a notebook's cell (_in_cell); Ruff writes the key for every file
        "code": diag.code,
        "name": diag.name,
        "message": diag.message,
        "filename": diag.path if diag.path == STDIN_NAME else os.path.abspath(diag.path),
        "location": _loc(diag.start),
        "end_location": _loc(diag.end),
        "fix": fix,
        "url": diag.url,
        "noqa_row": diag.start.row,
    }


def error_dict(error: FileError) -> dict:
    """A file that could not be checked, as Ruff writes a syntax error: `code` null, so a consumer
    that keys on codes skips it and one that counts entries sees it. One with no place in the file
    (binary, not UTF-8, unreadable) is put at its start, as Ruff puts an I/O error (E902): a
    consumer reading `location["row"]` of every entry does not meet a null."""
    at = _loc(error.location) if error.location is not None else {"row": 1, "column": 1}
    return {
        "cell": None,
        "code": None,
        "name": None,
        "message": error.reason,
        "filename": error.path if error.path == STDIN_NAME else os.path.abspath(error.path),
        "location": at,
        "end_location": at,
        "fix": None,
        "url": None,
        "noqa_row": None,
    }


def _in_cell(item: dict, cells: CellMap) -> dict:
    """A notebook's finding as Ruff writes one: `cell`, and rows counted within that cell."""
    cell, _ = cells.locate(item["location"]["row"])
    for key in ("location", "end_location"):
        item[key]["row"] = cells.locate(item[key]["row"])[1]
    item["noqa_row"] = item["location"]["row"]
    if item["fix"] is not None:
        for edit in item["fix"]["edits"]:
            edit["cell"], edit["location"]["row"] = cells.locate(edit["location"]["row"])
            edit["end_location"]["row"] = cells.locate(edit["end_location"]["row"])[1]
    item["cell"] = cell
    return item


def render(result: RunResult, fmt: str) -> str:
    cells = cell_maps(result)
    items = [_in_cell(diagnostic_dict(d), cells[d.path]) if d.path in cells else diagnostic_dict(d)
             for d in result.diagnostics]
    items += [error_dict(e) for e in result.errors]
    if fmt == "json-lines":
        return "".join(json.dumps(item) + "\n" for item in items)
    return json.dumps(items, indent=2) + "\n"
