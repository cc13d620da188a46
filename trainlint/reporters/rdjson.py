"""reviewdog's rdjson (one JSON document) and rdjsonl (one diagnostic per line).

Lines are 1-based and columns are 1-based UTF-8 byte offsets, converted from our character
columns with the file's text. A fix becomes a line-based suggestion (rows only, no columns)
covering exactly the finding's rows: reviewdog turns it into a GitHub ```suggestion block, which
replaces whole lines and must match the comment's line range. A fix that reaches outside those
rows is left out rather than shown wrong. A suggestion carries no safety of its own, so the
message ends with the fix's note (safe, unsafe or never applied), as a review comment does.
"""

from __future__ import annotations

import json

from trainlint.diagnostics import Diagnostic, FileError, RunResult
from trainlint.notebook import cell_maps, in_file, where
from trainlint.textpos import LineIndex, line_range, whole_line_replacement

SOURCE = {"name": "trainlint", "url": "https://github.com/trainlint/trainlint"}


def _position(index: LineIndex | None, row: int, column: int) -> dict:
    col = index.byte_column(row, column) if index is not None else column
    return {"line": row, "column": col}


def diagnostic(diag: Diagnostic, source: str | None, note: str = "") -> dict:
    index = LineIndex(source) if source is not None else None
    first, last = line_range(diag)
    start = _position(index, diag.start.row, diag.start.column)
    if last < diag.end.row:
        # The range ends at column 1 of the next row: say "end of the previous row" instead, so the
        # range's rows are the rows the finding (and its suggestion) covers.
        end_col = len(index.line(last)) + 1 if index is not None else 1
        end = _position(index, last, end_col)
    else:
        end = _position(index, diag.end.row, diag.end.column)
    out: dict = {
        "message": note + diag.message,
        "location": {"path": diag.path, "range": {"start": start, "end": end}},
        "severity": "ERROR",
        "source": SOURCE,
        "code": {"value": diag.code, **({"url": diag.url} if diag.url else {})},
    }
    if source is not None:
        replacement = whole_line_replacement(source, diag)
        if replacement is not None:
            lo, hi, text = replacement
            assert (lo, hi) == (first, last)
            out["suggestions"] = [{"range": {"start": {"line": lo}, "end": {"line": hi}}, "text": text}]
            out["message"] += "\n\n" + diag.fix.note()
    return out


def _error(error: FileError, source: str | None) -> dict:
    location: dict = {"path": error.path}
    if error.location is not None:
        index = LineIndex(source) if source is not None and error.location.row <= source.count("\n") + 1 else None
        start = _position(index, error.location.row, error.location.column) if index else {
            "line": error.location.row, "column": error.location.column}
        location["range"] = {"start": start}
    return {
        "message": f"could not check: {error.reason}",
        "location": location,
        "severity": "ERROR",
        "source": SOURCE,
    }


def diagnostics(result: RunResult) -> list[dict]:
    cells = cell_maps(result)  # a notebook's finding: its file's first line, no suggestion, the message says the cell
    out = [diagnostic(in_file(cells, d), None if d.path in cells else result.source_of(d.path), where(cells, d))
           for d in result.diagnostics]
    out.extend(_error(e, result.source_of(e.path)) for e in result.errors)
    return out


def render(result: RunResult, fmt: str = "rdjson") -> str:
    items = diagnostics(result)
    if fmt == "rdjsonl":
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
    doc = {"source": SOURCE, "severity": "ERROR", "diagnostics": items}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
