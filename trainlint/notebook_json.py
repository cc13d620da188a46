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


def _value_end(raw: str, i: int) -> int:
    """Where the JSON value that starts at i ends (json's C decoder reads it)."""
    return _DECODER.raw_decode(raw, i)[1]


def _object(raw: str, i: int, walkers: dict | None = None) -> tuple[list[tuple[str, int, int]], int]:
    """The members of the object whose `{` is at i, as (key, start, end) of each value, and where
    the object ends. A value whose key `walkers` names is read by that function (start -> end)
    instead of decoded whole: the cells are read member by member, not decoded once as the list
    and again cell by cell. The text was read by json.loads already, so it is well formed."""
    members = []
    i = _skip(raw, i + 1)
    while raw[i] != "}":
        key, i = scanstring(raw, i + 1)
        i = _skip(raw, _skip(raw, i) + 1)  # past the colon
        walk = walkers.get(key) if walkers else None
        end = walk(i) if walk is not None else _value_end(raw, i)
        members.append((key, i, end))
        i = _skip(raw, end)
        if raw[i] == ",":
            i = _skip(raw, i + 1)
    return members, i + 1


def _array(raw: str, i: int, walk=None) -> tuple[list[tuple[int, int]], int]:
    """(start, end) of each element of the array whose `[` is at i, each read by walk (start ->
    end; decoded by default), and where the array ends."""
    walk = walk or (lambda start: _value_end(raw, start))
    spans = []
    i = _skip(raw, i + 1)
    while raw[i] != "]":
        end = walk(i)
        spans.append((i, end))
        i = _skip(raw, end)
        if raw[i] == ",":
            i = _skip(raw, i + 1)
    return spans, i + 1


def source_spans(raw: str) -> list[tuple[int, int] | None]:
    """For each cell, in order, where its `source` value stands in raw (None: the cell has none).
    A key given twice counts as json.loads counts it: the last one. Each value of the notebook is
    decoded once (`outputs` may hold megabytes of images)."""
    spans: list[tuple[int, int] | None] = []

    def cell(start: int) -> int:
        if raw[start] != "{":
            spans.append(None)
            return _value_end(raw, start)
        members, end = _object(raw, start)
        spans.append(next(((s, e) for key, s, e in reversed(members) if key == "source"), None))
        return end

    def cells(start: int) -> int:
        spans.clear()  # `cells` given twice: the last counts
        return _array(raw, start, cell)[1] if raw[start] == "[" else _value_end(raw, start)

    _object(raw, _skip(raw, 0), {"cells": cells})
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
    items = _array(raw, start)[0]
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
