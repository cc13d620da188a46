"""Jupyter notebooks (.ipynb) as Python text the engine can check and fix, and back.

Much training code lives in notebooks. A notebook is read as one Python text: its code cells in
order, each after a boundary comment naming the cell (`# trainlint: cell 3`), so the analyses see
the whole program as the kernel runs it, findings can be placed in their cell, and the fixed text
splits back into cells. IPython syntax that is not Python is kept out of the engine's way and put
back untouched: a line magic, shell escape or help line (`%matplotlib inline`, `!pip install x`,
`model?`) becomes a `pass` statement tagged with its number (so an indented block that holds only
a magic still parses); a cell magic that keeps the cell Python (`%%time`) is treated as a line
magic; a cell of another language (`%%bash`, `%%writefile`) is not read at all.

Cells are numbered as Jupyter lays them out, from 1, markdown cells included. Writing replaces only
the sources of the cells a fix changed (notebook_json); every other byte of the JSON stays as read.
"""

from __future__ import annotations

import ast
import json
import re
import dataclasses
from dataclasses import dataclass, field

from trainlint.notebook_json import source_spans, source_text
from trainlint.textpos import split_lines, strip_eol

SUFFIX = ".ipynb"
_BOUNDARY = re.compile(r"^[ \t]*# trainlint: cell (\d+)[ \t]*\r?\n?$")
# A magic set aside: `pass  # trainlint: magic N`, indented as the line was (a fix that re-indents
# the block re-indents the magic too); the continuation lines of a magic that ends in a backslash
# become the bare comment, and come back verbatim.
_MAGIC_LINE = re.compile(r"^([ \t]*)pass  # trainlint: magic (\d+)[ \t]*$")
_MAGIC_CONTINUED = re.compile(r"^[ \t]*# trainlint: magic (\d+)[ \t]*$")
# Cell magics whose body is still Python: the first line is set aside, the rest is checked.
PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun", "%%memit", "%%debug")


class NotebookError(Exception):
    """A notebook that cannot be read, or a fix that cannot be written back into it."""


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


# A help line: `model?`, `torch.nn.Module??`.
_HELP = re.compile(r"^[ \t]*[A-Za-z_][\w.]*\?{1,2}[ \t]*$")


def _is_magic(line: str) -> bool:
    return line.lstrip().startswith(("%", "!")) or bool(_HELP.match(line))


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


@dataclass
class Notebook:
    """A parsed notebook and the Python text made of its code cells."""

    raw: str  # the JSON as read
    data: dict
    text: str = ""
    magics: list[str] = field(default_factory=list)  # the original IPython lines, by number

    @classmethod
    def parse(cls, raw: str) -> Notebook:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise NotebookError(f"not a notebook: invalid JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise NotebookError("not a notebook: no list of cells (nbformat 4 is read)")
        for number, cell in enumerate(data["cells"], start=1):
            source = cell.get("source", "") if isinstance(cell, dict) and cell.get("cell_type") == "code" else ""
            if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
                # nbformat's own rule; read as str(), `null` was checked as the Python `None`
                raise NotebookError(f"not a notebook: the source of cell {number} is not text "
                                    f"(a string or a list of strings)")
        notebook = cls(raw=raw, data=data)
        notebook.text = notebook._python_text()
        return notebook

    def _is_python(self) -> bool:
        # Metadata is free-form for whoever wrote the file: a key of another shape says nothing.
        meta = _mapping(self.data.get("metadata"))
        language = _mapping(meta.get("language_info")).get("name") or _mapping(meta.get("kernelspec")).get("language")
        return language is None or str(language).lower() == "python"

    def code_cells(self, data: dict | None = None):
        """(number, cell) of the cells read as Python, in order."""
        if not self._is_python():
            return  # an R or Julia notebook: nothing here is Python
        for number, cell in enumerate((data or self.data)["cells"], start=1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                first = _cell_source(cell).lstrip().split("\n", 1)[0].strip()
                if first.startswith("%%") and not first.startswith(PYTHON_CELL_MAGICS):
                    continue  # another language (%%bash, %%writefile): not read
                yield number, cell

    def _python_text(self) -> str:
        parts = []
        for number, cell in self.code_cells():
            text = _cell_source(cell)
            parts.append(f"# trainlint: cell {number}\n")
            try:
                ast.parse(text)
                ipython = False  # plain Python: no line is taken for a magic, not even in a string
            except (SyntaxError, ValueError):
                ipython = True
            continued = False
            for line in split_lines(text):
                body = strip_eol(line)
                end = line[len(body):] or "\n"
                if continued:  # the continuation of a magic that ended in a backslash: kept verbatim
                    parts.append(f"# trainlint: magic {len(self.magics)}{end}")
                elif ipython and _is_magic(body):
                    indent = body[: len(body) - len(body.lstrip())]
                    parts.append(f"{indent}pass  # trainlint: magic {len(self.magics)}{end}")
                else:
                    parts.append(body + end)
                    continue
                self.magics.append(body)
                continued = body.endswith("\\")
        return "".join(parts)

    def render(self, fixed_text: str) -> str:
        """The notebook's JSON with the sources of the code cells that `fixed_text` changed
        written in; every other byte as read (outputs, metadata, numbers, escapes, layout)."""
        cells: dict[int, list[str]] = {}
        current: list[str] | None = None
        preamble: list[str] = []  # text a fix put before the first boundary (a new import)
        for line in split_lines(fixed_text):
            m = _BOUNDARY.match(line)
            if m:
                current = cells.setdefault(int(m.group(1)), [])
                continue
            body = strip_eol(line)
            magic, continued = _MAGIC_LINE.match(body), _MAGIC_CONTINUED.match(body)
            if magic:
                line = magic.group(1) + self.magics[int(magic.group(2))].lstrip() + line[len(body):]
            elif continued:
                line = self.magics[int(continued.group(1))] + line[len(body):]
            (preamble if current is None else current).append(line)
        numbered = list(self.code_cells())
        if sorted(cells) != [number for number, _cell in numbered]:
            raise NotebookError("not fixed: a fix moved a cell boundary; the notebook was left as it was")
        if preamble:
            cells[numbered[0][0]][:0] = preamble
        spans = source_spans(self.raw)
        ensure_ascii = _escapes_non_ascii(self.raw, self.data)
        replaced = []
        for number, cell in numbered:
            lines = cells[number]
            source = _cell_source(cell)
            if lines and not source.endswith("\n"):
                lines[-1] = lines[-1].rstrip("\r\n")  # the cell had no newline after its last line
            if "".join(lines) == source:
                continue
            span = spans[number - 1]
            if span is None:
                raise NotebookError(f"not fixed: cell {number} has no source to write the fix into")
            replaced.append((span, source_text(self.raw, span, lines, ensure_ascii)))
        out = self.raw
        for (start, end), text in sorted(replaced, reverse=True):
            out = out[:start] + text + out[end:]
        return out


def _escapes_non_ascii(raw: str, data: dict) -> bool:
    """The notebook was written with its non-ASCII characters as `\\uXXXX` escapes (json.dumps'
    default, which some tools keep): every byte ASCII, yet the content is not. A line a fix writes
    is escaped the same way; Jupyter's own style (characters as they are) is kept too, and is the
    choice for a notebook with no non-ASCII content at all."""
    return raw.isascii() and "\\u" in raw and not json.dumps(data, ensure_ascii=False).isascii()


@dataclass(frozen=True)
class CellMap:
    """Rows of a notebook's Python text, told as (cell, row in that cell)."""

    starts: tuple[tuple[int, int], ...]  # (first row of the cell in the text, cell number)

    @classmethod
    def of(cls, text: str) -> CellMap:
        starts = []
        for row, line in enumerate(split_lines(text), start=1):
            m = _BOUNDARY.match(line)
            if m:
                starts.append((row + 1, int(m.group(1))))
        return cls(tuple(starts))

    def locate(self, row: int) -> tuple[int, int]:
        cell, first = 1, 1
        for start, number in self.starts:
            if start > row:
                break
            cell, first = number, start
        return cell, row - first + 1


def cell_maps(result) -> dict[str, CellMap]:
    """A CellMap for every notebook of a run's result (reporters place its findings by cell)."""
    return {f.path: CellMap.of(f.source) for f in result.files if is_notebook(f.path) and f.source is not None}


def where(maps: dict[str, CellMap], diag) -> str:
    """`cell N, line R: ` for a finding in a notebook, for formats whose lines are the file's."""
    if diag.path not in maps:
        return ""
    cell, row = maps[diag.path].locate(diag.start.row)
    return f"cell {cell}, line {row}: "


def in_file(maps: dict[str, CellMap], diag):
    """The finding as formats that place it by the file's own lines take it. A notebook's rows are
    those of its cells' code joined, not of its JSON: such a finding is placed at the file's first
    line (`where` names the cell and line in the message) and carries no line-based fix, which
    would edit the JSON (Ruff reports notebooks the same way)."""
    if diag.path not in maps:
        return diag
    from trainlint.diagnostics import Location

    first = Location(1, 1)
    return dataclasses.replace(diag, start=first, end=first, start_offset=0, end_offset=0, fix=None)

