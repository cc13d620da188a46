"""Where each cell's source stands in a notebook's JSON text, and a new source written in that
notebook's own layout, so a fix replaces those characters and nothing else.

Writing the whole document again with `json.dumps` changed bytes no fix touched: a number as its
writer spelled it (`0.000052`, as JavaScript writes it, came back `5.2e-05`), a minified notebook
(it gained a space after every separator), a string escaped another way. Only the `source` values
of the cells a fix changed are written; in a list, a line the fix kept keeps its text as read.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


def _skip(raw: str, i: int) -> int:
    while i < len(raw) and raw[i] in _WHITESPACE:
        i += 1
    return i


def _members(raw: str, i: int):
    """(key, start, end) of each member of the object whose `{` is at i; the text was read by
    json.loads already, so it is well formed."""
    i = _skip(raw, i + 1)
    while raw[i] != "}":
        key, i = scanstring(raw, i + 1)
        i = _skip(raw, _skip(raw, i) + 1)  # past the colon
        _value, end = _DECODER.raw_decode(raw, i)
        yield key, i, end
        i = _skip(raw, end)
        if raw[i] == ",":
            i = _skip(raw, i + 1)


def _elements(raw: str, i: int) -> list[tuple[int, int]]:
    """(start, end) of each element of the array whose `[` is at i."""
    spans = []
    i = _skip(raw, i + 1)
    while raw[i] != "]":
        _value, end = _DECODER.raw_decode(raw, i)
        spans.append((i, end))
        i = _skip(raw, end)
        if raw[i] == ",":
            i = _skip(raw, i + 1)
    return spans


def source_spans(raw: str) -> list[tuple[int, int] | None]:
    """For each cell, in order, where its `source` value stands in raw (None: the cell has none).
    A key given twice counts as json.loads counts it: the last one."""
    start = _skip(raw, 0)
    cells = None
    for key, value_start, _end in _members(raw, start):
        if key == "cells":
            cells = value_start
    spans: list[tuple[int, int] | None] = []
    for cell_start, _cell_end in _elements(raw, cells):
        found = None
        if raw[cell_start] == "{":
            for key, value_start, value_end in _members(raw, cell_start):
                if key == "source":
                    found = (value_start, value_end)
        spans.append(found)
    return spans


def source_text(raw: str, span: tuple[int, int], lines: list[str], ensure_ascii: bool) -> str:
    """The JSON of a cell's new source, to stand at span: a string stays a string; a list keeps the
    whitespace and separators it had (or, empty before, those of the notebook), and a line that was
    there keeps the characters it was written with."""
    start, end = span
    if raw[start] == '"':
        return json.dumps("".join(lines), ensure_ascii=ensure_ascii)
    if not lines:
        return "[]"
    items = _elements(raw, start)
    kept = {value: raw[s:e] for s, e in items if isinstance(value := json.loads(raw[s:e]), str)}
    if items:
        lead = raw[start + 1:items[0][0]]
        tail = raw[items[-1][1]:end - 1]
        between = raw[items[0][1]:items[1][0]] if len(items) > 1 else "," + lead
    else:
        lead, tail, between = _empty_list_layout(raw, start)
    written = [kept.get(line) or json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    return "[" + lead + between.join(written) + tail + "]"


def _empty_list_layout(raw: str, start: int) -> tuple[str, str, str]:
    """(lead, tail, between) for items put in a list that was `[]`: as json.dumps lays out the
    notebook, one item per line one indentation deeper than the line the list opens on; on one
    line for a notebook written on one line."""
    newline = "\r\n" if "\r\n" in raw else "\n"
    line = raw[raw.rfind("\n", 0, start) + 1:start]
    if "\n" not in raw.strip():
        return "", "", ", " if re.search(r',\s"', raw) else ","
    outer = line[:len(line) - len(line.lstrip(" \t"))]
    m = re.search(r'\n([ \t]+)"', raw)
    unit = m.group(1) if m else " "
    lead = newline + outer + unit
    return lead, newline + outer, "," + lead
