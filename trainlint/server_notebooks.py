"""Notebook documents for the language server (LSP 3.17 `notebookDocument/*`): an editor such as
VS Code sends a Jupyter notebook as a list of cells, each its own text document, and expects the
findings of each cell published on that cell.

The cells are read as `trainlint check` reads an .ipynb file (trainlint/notebook.py): the code
cells in order as one program, IPython magics set aside, so a loader built in cell 2 and iterated
in cell 5 is one finding, in cell 2. Findings are placed back by row (a cell's rows are the
program's rows after its boundary line; the columns are the cell's own, as only magic lines
differ). Every edit, a fix, a `# noqa` or fix-all, is made on the program text and split back
into cells by Notebook.render, the same path `--fix` writes notebooks through, then sent as the
smallest range of whole lines that changed in each cell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainlint.diagnostics import Diagnostic
from trainlint.notebook import CellMap, Notebook, NotebookError
from trainlint.textpos import split_lines

if TYPE_CHECKING:
    from trainlint.server import Document

# LSP NotebookCellKind: 1 is Markup, 2 is Code.
CODE = 2


@dataclass
class Cell:
    uri: str  # the cell's own text document (vscode-notebook-cell:...)
    kind: int
    language: str
    doc: Document  # its text, as the editor's changes left it


@dataclass
class NotebookDocument:
    uri: str
    version: int | None
    cells: list[Cell]
    diagnostics: list[Diagnostic] = field(default_factory=list)  # of `program`, as last published
    program: Notebook | None = None  # the cells as read when last linted
    rows: CellMap | None = None  # where the program's rows are in the cells

    def read(self) -> Notebook:
        """The cells as one notebook: the program to lint. A code cell in another language is raw,
        not read, as a %%bash cell is in a file."""
        cells = [{"cell_type": "code" if cell.kind == CODE and cell.language == "python" else "raw",
                  "source": cell.doc.text} for cell in self.cells]
        self.program = Notebook.parse(json.dumps({"cells": cells, "metadata": {}}))
        self.rows = CellMap.of(self.program.text)
        return self.program

    def place(self, row: int) -> tuple[Cell, int]:
        """The cell and its 1-based row of a row of the program."""
        number, cell_row = self.rows.locate(row)
        return self.cells[number - 1], cell_row

    def split(self, new_program: str) -> dict[str, str] | None:
        """The cell texts, by cell uri, of an edited program (only the cells that change); None
        when the edit moved a cell boundary and cannot be put back into cells."""
        try:
            rendered = json.loads(self.program.render(new_program))["cells"]
        except NotebookError:
            return None
        old = json.loads(self.program.raw)["cells"]
        return {cell.uri: new["source"] for cell, new, was in zip(self.cells, rendered, old)
                if new["source"] != was["source"]}


def changed_lines(old: str, new: str) -> tuple[int, int, str]:
    """The smallest run of whole lines that turns `old` into `new`: (first row, end row, their new
    text), rows 0-based and the end exclusive, so an editor keeps its cursor and folds outside
    the change."""
    a, b = split_lines(old), split_lines(new)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    return head, len(a) - tail, "".join(b[head:len(b) - tail])
