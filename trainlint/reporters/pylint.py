"""Pylint's parseable format (`pylint`): `path:row: [CODE] message`, one line per finding, which
editors and CI tools that read pylint's output (its `--output-format=parseable` lines) pick up.

A finding in a notebook names its cell in the message, as the row is the file's.
"""

from __future__ import annotations

from trainlint.diagnostics import RunResult
from trainlint.notebook import cell_maps, in_file, where


def render(result: RunResult, fmt: str = "pylint") -> str:
    cells = cell_maps(result)
    return "".join(f"{d.path}:{in_file(cells, d).start.row}: [{d.code}] {where(cells, d)}{d.message}\n"
                   for d in result.diagnostics)
