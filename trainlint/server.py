"""`trainlint server`: the Language Server Protocol over standard input and output, so editors
show findings as you type and apply fixes as code actions (Ruff's `ruff server`, in small).

What it does: lints every open document on open and change (the buffer, not the file on disk;
changes arrive as incremental edits, and a burst of them is linted once, at its last state)
with the settings of its path (nearest configuration file, re-read on every lint so edits to it
apply at once), publishes the findings as diagnostics (or, to a client that pulls them, LSP
3.17's textDocument/diagnostic, answers its requests with them), and answers code actions with each
finding's fix (safe ones preferred; unsafe ones and suggestions marked so), a `# noqa` for the
line, and `source.fixAll.trainlint`, which applies the safe fixes as `--fix` would. Jupyter
notebooks come as notebook documents, their findings published on their cells
(trainlint/server_notebooks.py). A hover on a rule code in a comment explains the rule; a
configuration file changed on disk (when the client watches files) re-lints what is open, and
asks a client that pulls findings to pull them again. Suppression comments that do not do what they
look like (a file-level `# trainlint: noqa` after code, `# noqa TL101`), which the check run warns
of on standard error, are published as warnings with no code where TL001 does not report them.

Messages are JSON-RPC 2.0 framed with Content-Length headers. Positions: the client's choice
among utf-32, utf-8 and utf-16 (the protocol's default); the engine's columns are characters.
The server never executes the code it checks and keeps running when one document fails.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import re
import sys
import threading
import traceback
from dataclasses import dataclass, field, replace
from urllib.parse import unquote, urlparse

import click

from trainlint import __version__
from trainlint.config import CONFIG_FILES, ConfigError, SettingsResolver
from trainlint.diagnostics import Applicability, Diagnostic, FileError, Location
from trainlint.notebook import is_notebook
from trainlint.server_notebooks import CODE, Cell, NotebookDocument, changed_lines
from trainlint.textpos import apply_edits, split_lines, strip_eol

FIX_ALL = "source.fixAll.trainlint"
# LSP DiagnosticSeverity: 2 is Warning (a finding is advice, not a compile error); 1 is Error.
WARNING, ERROR = 2, 1
_RULE_CODE = re.compile(r"\b[A-Z]+[0-9]+\b")  # as suppressions read codes; other tools' codes get no hover
# The messages that make a document's pending lint stale, and where their params name it.
_CHANGES = {"textDocument/didChange": "textDocument", "textDocument/didClose": "textDocument",
            "notebookDocument/didChange": "notebookDocument", "notebookDocument/didClose": "notebookDocument"}


# -- transport ----------------------------------------------------------------------------

def read_message(stream) -> dict | None:
    """One JSON-RPC message from a binary stream; None at end of input."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None:
        raise ValueError("a message without Content-Length")
    return json.loads(stream.read(length).decode("utf-8"))


def write_message(stream, message: dict) -> None:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


# -- positions ----------------------------------------------------------------------------

def _units(text: str, encoding: str) -> int:
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _index(line: str, units: int, encoding: str) -> int:
    """The character index in `line` of a position `units` code units in (clamped to the line)."""
    if encoding == "utf-32":
        return min(units, len(line))
    size = (lambda ch: len(ch.encode("utf-8", "surrogatepass"))) if encoding == "utf-8" else (
        lambda ch: 2 if ord(ch) > 0xFFFF else 1)
    seen = 0
    for i, ch in enumerate(line):
        if seen >= units:
            return i
        seen += size(ch)
    return len(line)


def _position(lines: list[str], row: int, column: int, encoding: str) -> dict:
    """LSP position of a 1-based row and character column."""
    line = lines[row - 1] if 1 <= row <= len(lines) else ""
    return {"line": row - 1, "character": _units(line[: column - 1], encoding)}


def _range(lines: list[str], start: Location, end: Location, encoding: str) -> dict:
    return {"start": _position(lines, start.row, start.column, encoding),
            "end": _position(lines, end.row, end.column, encoding)}


def uri_to_path(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return unquote(parsed.path) or uri
    path = unquote(parsed.path)
    if re.match(r"^/[A-Za-z]:", path):  # file:///C:/x on Windows
        path = path[1:]
    return path


@dataclass
class Document:
    uri: str
    text: str
    version: int | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)  # the findings of the last lint
    lines: list[str] = field(default_factory=list)  # the text's rows, for position conversion
    # The last lint's findings as LSP diagnostics (pushed, or kept for the client to pull); None
    # while the text has changed since (a change superseded by a later one is not linted).
    reported: list[dict] | None = None

    def __post_init__(self) -> None:
        self.update(self.text, self.version)

    def update(self, text: str, version: int | None) -> None:
        self.text, self.version = text, version
        self.lines = [strip_eol(line) for line in split_lines(text)]
        self.reported = None

    def offset(self, position: dict, encoding: str) -> int:
        """The character offset in the text of an LSP position (a line past the end is the end)."""
        rows = split_lines(self.text)
        line = position["line"]
        if line >= len(rows):
            return len(self.text)
        return sum(len(row) for row in rows[:line]) + _index(strip_eol(rows[line]), position["character"], encoding)

    def edit(self, changes: list[dict], version: int | None, encoding: str) -> None:
        """Apply `contentChanges` in order: each range is in the text the previous ones left."""
        for change in changes:
            self.text = self.apply_change(change, encoding)
        self.update(self.text, version)

    def apply_change(self, change: dict, encoding: str) -> str:
        """The text after one `contentChanges` entry: a whole new text, or a range replaced."""
        if "range" not in change:
            return change["text"]
        start, end = (self.offset(change["range"][k], encoding) for k in ("start", "end"))
        return self.text[:start] + change["text"] + self.text[max(start, end):]


class Server:
    def __init__(self, out, pending: queue.Queue | None = None) -> None:
        self.out = out
        self.pending = pending  # messages read but not yet handled (see publish_soon)
        self.documents: dict[str, Document] = {}
        self.notebooks: dict[str, NotebookDocument] = {}
        self.cell_notebook: dict[str, str] = {}  # a cell's uri -> its notebook's
        self.encoding = "utf-16"
        self.shutting_down = False
        self.watches_files = False  # the client can watch the configuration files for us
        # LSP 3.17 pull diagnostics: a text document's findings are pulled by the client that asks
        # (textDocument/diagnostic), never also pushed (it would show them twice), and pushed to
        # every other client. `refreshes`: the client can be asked to pull them all again.
        self.pulls = False
        self.refreshes = False
        self.request_ids = itertools.count(1)  # of the requests the server sends

    # -- protocol plumbing --------------------------------------------------------------

    def send(self, message: dict) -> None:
        write_message(self.out, {"jsonrpc": "2.0", **message})

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def log(self, text: str, kind: int = 1) -> None:
        self.notify("window/logMessage", {"type": kind, "message": text})

    def handle(self, message: dict) -> bool:
        """Handle one message; False when the client said `exit`."""
        if not isinstance(message, dict) or not isinstance(message.get("method", ""), (str, type(None))):
            # A batch (a JSON array: JSON-RPC has them, LSP does not) or a method that is no
            # name: refused, and the server reads on (an array ended it with an AttributeError).
            self.send({"id": None, "error": {"code": -32600, "message": "invalid request: an LSP message is one "
                                                                       "JSON object with a method name"}})
            return True
        method = message.get("method")
        params = message.get("params") or {}
        request_id = message.get("id")
        if method == "exit":
            return False
        if not isinstance(params, dict):  # LSP's params of every method the server handles are an object
            if request_id is not None:
                self.send({"id": request_id, "error": {"code": -32602, "message": f"invalid params of {method}: "
                                                                                  f"expected an object"}})
            return True
        handler = getattr(self, "on_" + (method or "").replace("/", "_").replace("$", "dollar"), None)
        if handler is None:
            if request_id is not None and method is not None:
                self.send({"id": request_id, "error": {"code": -32601, "message": f"unhandled method {method}"}})
            return True
        try:
            result = handler(params)
        except Exception as exc:  # noqa: BLE001 - one bad request must not end the editor's session
            self.log(f"trainlint: {method} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            if request_id is not None:
                self.send({"id": request_id, "error": {"code": -32603, "message": f"{type(exc).__name__}: {exc}"}})
            return True
        if request_id is not None:
            self.send({"id": request_id, "result": result})
        return True

    # -- lifecycle ----------------------------------------------------------------------

    def on_initialize(self, params: dict) -> dict:
        offered = ((params.get("capabilities") or {}).get("general") or {}).get("positionEncodings") or []
        # Characters (utf-32) need no conversion; otherwise the client's first choice we know.
        self.encoding = next((e for e in ("utf-32", *offered) if e in offered and e in ("utf-32", "utf-8", "utf-16")),
                             "utf-16")
        workspace = (params.get("capabilities") or {}).get("workspace") or {}
        self.watches_files = bool((workspace.get("didChangeWatchedFiles") or {}).get("dynamicRegistration"))
        self.pulls = ((params.get("capabilities") or {}).get("textDocument") or {}).get("diagnostic") is not None
        self.refreshes = bool((workspace.get("diagnostics") or {}).get("refreshSupport"))
        capabilities = {
            "positionEncoding": self.encoding,
            "textDocumentSync": {"openClose": True, "change": 2, "save": True},  # incremental edits
            "codeActionProvider": {"codeActionKinds": ["quickfix", FIX_ALL]},
            "hoverProvider": True,
            "notebookDocumentSync": {"notebookSelector": [{"cells": [{"language": "python"}]}], "save": True},
        }
        if self.pulls:
            # A file's findings depend on its text and settings only (a notebook's cells, which
            # depend on each other, are pushed: see on_textDocument_diagnostic).
            capabilities["diagnosticProvider"] = {"interFileDependencies": False, "workspaceDiagnostics": False}
        return {"capabilities": capabilities, "serverInfo": {"name": "trainlint", "version": __version__}}

    def on_initialized(self, params: dict) -> None:
        if self.watches_files:
            # Ask the client to say when a configuration file changes on disk (a `git checkout`, an
            # edit in another program): the open documents are then linted again with it. The
            # client's answer to this request needs no handling.
            watchers = [{"globPattern": f"**/{name}"} for name in CONFIG_FILES]
            self.send({"id": "trainlint-watch-config", "method": "client/registerCapability", "params": {
                "registrations": [{"id": "trainlint-config", "method": "workspace/didChangeWatchedFiles",
                                   "registerOptions": {"watchers": watchers}}]}})
        return None

    def on_workspace_didChangeWatchedFiles(self, params: dict) -> None:
        """A configuration file changed: every open document's findings may have (settings are read
        afresh on each lint)."""
        self._relint_open()

    def _relint_open(self, changed: bool = False, done: Document | None = None) -> None:
        """Lint every open document again (but `done`, just linted), as the settings may have
        changed. A client that pulls findings is asked to pull them again
        (workspace/diagnostic/refresh) when a text document's changed, or `changed` says one
        already did: it would not ask before the next edit."""
        for doc in self.documents.values():
            if doc is not done and not _notebook_file(doc.uri):
                changed = self._relint(doc) or changed
        for notebook in self.notebooks.values():
            self.publish_notebook(notebook)
        if changed and self.pulls and self.refreshes:
            # The client's answer to this request needs no handling.
            self.send({"id": f"trainlint-refresh-{next(self.request_ids)}", "method": "workspace/diagnostic/refresh"})

    def _relint(self, doc: Document) -> bool:
        """Lint `doc` again; whether what it reports changed."""
        before = doc.reported
        self.check(doc)
        return doc.reported != before

    def on_shutdown(self, params: dict) -> None:
        self.shutting_down = True
        return None

    # -- documents ----------------------------------------------------------------------

    def on_textDocument_didOpen(self, params: dict) -> None:
        item = params["textDocument"]
        self.documents[item["uri"]] = Document(item["uri"], item["text"], item.get("version"))
        if not _notebook_file(item["uri"]):
            self.check(self.documents[item["uri"]])

    def on_textDocument_didChange(self, params: dict) -> None:
        doc = self.documents.get(params["textDocument"]["uri"])
        changes = params.get("contentChanges") or []
        if doc is None or not changes:
            return
        doc.edit(changes, params["textDocument"].get("version"), self.encoding)
        if not self._superseded(doc.uri) and not _notebook_file(doc.uri):
            self.check(doc)

    def _superseded(self, uri: str) -> bool:
        """Whether a change or close of `uri` (a text or notebook document) is already waiting: then
        linting now is wasted work (a fast typist sends a change per key; the editor shows only the
        last state's findings)."""
        if self.pending is None:
            return False
        with self.pending.mutex:
            waiting = list(self.pending.queue)
        return any(isinstance(m, dict) and isinstance(m.get("method"), str) and m["method"] in _CHANGES
                   and _named(m.get("params"), _CHANGES[m["method"]]) == uri for m in waiting)

    def on_textDocument_didSave(self, params: dict) -> None:
        doc = self.documents.get(params["textDocument"]["uri"])
        # The configuration beside it may have changed. If its findings did (its text has not), the
        # settings did: the other open documents are linted again with them too.
        if doc is not None and not _notebook_file(doc.uri) and self._relint(doc):
            self._relint_open(changed=True, done=doc)

    def on_textDocument_didClose(self, params: dict) -> None:
        uri = params["textDocument"]["uri"]
        self.documents.pop(uri, None)
        if not self.pulls:  # a client drops what it pulled for a document it closes
            self.notify("textDocument/publishDiagnostics", {"uri": uri, "diagnostics": []})

    def on_textDocument_diagnostic(self, params: dict) -> dict:
        """LSP 3.17 pull: the findings of an open text document as a full report, or `unchanged`
        when the client's `previousResultId` still names them. The result id is a digest of the
        report, so it changes exactly when what is reported does (an edit, the settings).

        A notebook cell is answered with an empty report: cells' findings are always pushed
        (publish_notebook), whether or not the client pulls. A client's pull capability does not
        say whether it pulls cells (VS Code's client did not before vscode-languageclient 10, so
        findings not pushed would not be shown there), and the cells are one program, so an edit
        in one cell changes another's findings, which a client asks for again only on that cell's
        own edits. A client keeps pulled and pushed diagnostics apart, so the empty report leaves
        the pushed ones shown, once. A document that is not open (closed, never opened, an
        .ipynb opened as text) has nothing to report either: an empty report, which the spec
        allows as well as an error, and which clears whatever the client still shows for it."""
        doc = self.documents.get(params["textDocument"]["uri"])
        if doc is None or _notebook_file(doc.uri):
            return {"kind": "full", "items": []}
        if doc.reported is None:  # a change was superseded by another the client has not sent yet
            self.check(doc)
        result_id = hashlib.sha256(json.dumps(doc.reported, sort_keys=True).encode()).hexdigest()[:16]
        if params.get("previousResultId") == result_id:
            return {"kind": "unchanged", "resultId": result_id}
        return {"kind": "full", "resultId": result_id, "items": doc.reported}

    # -- notebooks (trainlint/server_notebooks.py) ----------------------------------------

    def on_notebookDocument_didOpen(self, params: dict) -> None:
        item = params["notebookDocument"]
        texts = {doc["uri"]: doc for doc in params.get("cellTextDocuments") or []}
        notebook = NotebookDocument(item["uri"], item.get("version"), [])
        notebook.cells = [self._cell(notebook, cell, texts) for cell in item.get("cells") or []]
        self.notebooks[notebook.uri] = notebook
        self.publish_notebook(notebook)

    def _cell(self, notebook: NotebookDocument, cell: dict, texts: dict, old: Cell | None = None) -> Cell:
        """A cell of `notebook` from an LSP NotebookCell and the text documents opened with it (a
        cell moved within the notebook keeps its text)."""
        uri = cell["document"]
        self.cell_notebook[uri] = notebook.uri
        item = texts.get(uri)
        if item is None and old is not None:
            return Cell(uri, cell.get("kind", old.kind), old.language, old.doc)
        item = item or {}
        return Cell(uri, cell.get("kind", CODE), item.get("languageId", "python"),
                    Document(uri, item.get("text", ""), item.get("version")))

    def on_notebookDocument_didChange(self, params: dict) -> None:
        notebook = self.notebooks.get(params["notebookDocument"]["uri"])
        if notebook is None:
            return
        notebook.version = params["notebookDocument"].get("version", notebook.version)
        cells = (params.get("change") or {}).get("cells") or {}
        structure = cells.get("structure")
        if structure:
            texts = {doc["uri"]: doc for doc in structure.get("didOpen") or []}
            known = {cell.uri: cell for cell in notebook.cells}
            splice = structure["array"]
            start, count = splice["start"], splice["deleteCount"]
            new = [self._cell(notebook, cell, texts, known.get(cell["document"])) for cell in splice.get("cells") or []]
            notebook.cells[start:start + count] = new
            for closed in structure.get("didClose") or []:
                if closed["uri"] not in {cell.uri for cell in notebook.cells}:
                    self.cell_notebook.pop(closed["uri"], None)
                    self.notify("textDocument/publishDiagnostics", {"uri": closed["uri"], "diagnostics": []})
        by_uri = {cell.uri: cell for cell in notebook.cells}
        for data in cells.get("data") or []:  # a cell turned from code to markdown, or back
            if data.get("document") in by_uri:
                by_uri[data["document"]].kind = data.get("kind", by_uri[data["document"]].kind)
        for content in cells.get("textContent") or []:
            cell = by_uri.get(content["document"]["uri"])
            if cell is None:
                continue
            cell.doc.edit(content.get("changes") or [], content["document"].get("version"), self.encoding)
        if not self._superseded(notebook.uri):
            self.publish_notebook(notebook)

    def on_notebookDocument_didSave(self, params: dict) -> None:
        notebook = self.notebooks.get(params["notebookDocument"]["uri"])
        if notebook is not None:
            self.publish_notebook(notebook)  # the configuration beside it may have changed

    def on_notebookDocument_didClose(self, params: dict) -> None:
        notebook = self.notebooks.pop(params["notebookDocument"]["uri"], None)
        for cell in notebook.cells if notebook is not None else []:
            self.cell_notebook.pop(cell.uri, None)
            self.notify("textDocument/publishDiagnostics", {"uri": cell.uri, "diagnostics": []})

    # -- linting ------------------------------------------------------------------------

    def _settings(self, uri: str):
        path = uri_to_path(uri)
        return path, SettingsResolver().for_path(path)

    def _lint(self, uri: str, text: str) -> list[Diagnostic]:
        """The findings in `text` of the document at `uri`; raises ParseError for a syntax error. A
        configuration error is shown to the user and leaves no findings."""
        from trainlint.engine import lint_text

        try:
            path, settings = self._settings(uri)
            if settings.is_excluded(path):
                return []
            return lint_text(text, path, settings.active_rules(path), settings)
        except ConfigError as exc:
            self.log(f"trainlint: {exc}")
            self.notify("window/showMessage", {"type": 1, "message": f"trainlint: {exc}"})
        except RecursionError:
            self.log(f"trainlint: {uri}: too deeply nested to analyse")
        return []

    def check(self, doc: Document) -> None:
        """Lint an open text document: its findings as LSP diagnostics, pushed to the client, or
        kept for it to pull (on_textDocument_diagnostic) when it pulls."""
        from trainlint.engine import ParseError

        doc.diagnostics = []
        try:
            doc.diagnostics = self._lint(doc.uri, doc.text)
            doc.reported = [self._diagnostic(doc.lines, d, i, doc.version) for i, d in enumerate(doc.diagnostics)]
            doc.reported += [self._note(doc.lines, start, end, message)
                             for start, end, message in self._suppression_problems(doc.uri, doc.text)]
        except ParseError as exc:
            doc.reported = [self._syntax_error(doc.lines, str(exc))]
        if not self.pulls:
            self._send_diagnostics(doc, doc.reported)

    def publish_notebook(self, notebook: NotebookDocument) -> None:
        """The findings of the notebook's cells read as one program, each published on its cell
        (an empty list on the others, which clears what they showed)."""
        from trainlint.engine import ParseError

        published: dict[str, list[dict]] = {cell.uri: [] for cell in notebook.cells}
        notebook.diagnostics = []
        program = notebook.read()
        try:
            notebook.diagnostics = self._lint(notebook.uri, program.text)
            for i, diag in enumerate(notebook.diagnostics):
                cell, row = notebook.place(diag.start.row)
                end_cell, end_row = notebook.place(diag.end.row)
                end = Location(end_row, diag.end.column)
                if end_cell is not cell:  # a finding that runs on into the next cell stops at this one's end
                    end = Location(len(cell.doc.lines), len(cell.doc.lines[-1]) + 1)
                moved = replace(diag, start=Location(row, diag.start.column), end=end)
                published[cell.uri].append(self._diagnostic(cell.doc.lines, moved, i, notebook.version))
            for start, end, message in self._suppression_problems(notebook.uri, program.text):
                cell, row = notebook.place(start.row)
                published[cell.uri].append(self._note(
                    cell.doc.lines, Location(row, start.column), Location(row, end.column), message))
        except ParseError as exc:
            at = FileError(notebook.uri, str(exc)).location or Location(1, 1)
            cell, row = notebook.place(at.row)
            message = str(exc).replace(f"line {at.row},", f"line {row},", 1)  # the cell's row
            published[cell.uri] = [self._syntax_error(cell.doc.lines, message, Location(row, at.column))]
        for cell in notebook.cells:
            self._send_diagnostics(cell.doc, published[cell.uri])

    def _send_diagnostics(self, doc: Document, published: list[dict]) -> None:
        params = {"uri": doc.uri, "diagnostics": published}
        if doc.version is not None:
            params["version"] = doc.version
        self.notify("textDocument/publishDiagnostics", params)

    def _diagnostic(self, lines: list[str], diag: Diagnostic, index: int, version: int | None) -> dict:
        """The LSP diagnostic of a finding; `data` names the finding (its index in what was linted
        at `version`) so a code action can find its fix."""
        out = {
            "range": _range(lines, diag.start, diag.end, self.encoding),
            "severity": WARNING,
            "code": diag.code,
            "source": "trainlint",
            "message": diag.message,
            "data": {"index": index, "version": version},
        }
        if diag.url:
            out["codeDescription"] = {"href": diag.url}
        return out

    def _suppression_problems(self, uri: str, text: str) -> list[tuple[Location, Location, str]]:
        """The suppression comments of `text` that do not do what they look like (a file-level
        `# trainlint: noqa` after code, `# noqa TL101` without its colon), where they stand and
        what is wrong, as the check run warns of them on standard error: before, the editor
        showed nothing. None where the audit rule (TL001) ran, as its findings show them, nor with
        `ignore-noqa`, nor in an excluded file."""
        from trainlint.suppressions import problem_message, problems
        from trainlint.textpos import LineIndex

        found = problems(text)
        if not found:
            return []
        try:
            path, settings = self._settings(uri)
        except ConfigError:
            return []  # _lint has shown it
        if settings.ignore_noqa or settings.is_excluded(path) \
                or any(r.rule.audits_suppressions for r in settings.active_rules(path)):
            return []
        index = LineIndex(text)
        return [(index.location(d.start), index.location(d.end), problem_message(text, d, p)) for d, p in found]

    def _note(self, lines: list[str], start: Location, end: Location, message: str) -> dict:
        """A warning of trainlint's that is no rule's finding: no code, and no `data`, so no code
        action is looked up for it."""
        return {"range": _range(lines, start, end, self.encoding), "severity": WARNING, "source": "trainlint",
                "message": message}

    def _syntax_error(self, lines: list[str], message: str, at: Location | None = None) -> dict:
        at = at or FileError("", message).location or Location(1, 1)
        position = _position(lines, at.row, at.column, self.encoding)
        return {"range": {"start": position, "end": position}, "severity": ERROR, "source": "trainlint",
                "message": message}

    # -- hover --------------------------------------------------------------------------

    def on_textDocument_hover(self, params: dict) -> dict | None:
        """The rule's explanation when the cursor is on a rule code in a comment (`# noqa: TL104`),
        as `trainlint rule TL104` prints it."""
        from trainlint.registry import get_rule

        doc = self._text_of(params["textDocument"]["uri"])
        row = params["position"]["line"]
        if doc is None or row >= len(doc.lines):
            return None
        line = doc.lines[row]
        at = _index(line, params["position"]["character"], self.encoding)
        comment = line.find("#")
        for m in _RULE_CODE.finditer(line):
            if 0 <= comment < m.start() and m.start() <= at <= m.end():
                rule = get_rule(m.group())
                if rule is None:
                    return None
                return {"contents": {"kind": "markdown", "value": rule.explanation()},
                        "range": {"start": {"line": row, "character": _units(line[:m.start()], self.encoding)},
                                  "end": {"line": row, "character": _units(line[:m.end()], self.encoding)}}}
        return None

    def _text_of(self, uri: str) -> Document | None:
        """The open text document, or notebook cell, at `uri`."""
        notebook = self.notebooks.get(self.cell_notebook.get(uri, ""))
        if notebook is not None:
            return next((cell.doc for cell in notebook.cells if cell.uri == uri), None)
        return self.documents.get(uri)

    # -- code actions -------------------------------------------------------------------

    def on_textDocument_codeAction(self, params: dict) -> list[dict]:
        uri = params["textDocument"]["uri"]
        notebook = self.notebooks.get(self.cell_notebook.get(uri, ""))
        doc = self.documents.get(uri)
        if notebook is not None:
            edits = _NotebookEdits(notebook, self.encoding)
        elif doc is not None and not _notebook_file(uri):
            edits = _TextEdits(doc, self.encoding)
        else:
            return []
        only = (params.get("context") or {}).get("only")
        actions = []
        if not only or "quickfix" in only:
            for sent in (params.get("context") or {}).get("diagnostics") or []:
                diag = _ours(edits.diagnostics, edits.version, sent)
                if diag is not None:
                    actions += self._quick_fixes(edits, diag, sent)
        if not only or any(FIX_ALL.startswith(kind) for kind in only):
            fix_all = self._fix_all(edits)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    def _quick_fixes(self, edits, diag: Diagnostic, sent: dict) -> list[dict]:
        actions = []
        if diag.fix is not None and diag.fix.edits:
            label = {Applicability.SAFE: "", Applicability.UNSAFE: " (unsafe fix)",
                     Applicability.DISPLAY_ONLY: " (suggestion)"}[diag.fix.applicability]
            edit = edits.of_fix(diag)
            if edit is not None:
                actions.append({"title": f"trainlint ({diag.code}): {diag.fix.message}{label}", "kind": "quickfix",
                                "diagnostics": [sent], "isPreferred": diag.fix.applicability is Applicability.SAFE,
                                "edit": edit})
        edit = edits.of_noqa(diag)
        if edit is not None:
            actions.append({"title": f"trainlint ({diag.code}): Disable for this line", "kind": "quickfix",
                            "diagnostics": [sent], "edit": edit})
        return actions

    def _fix_all(self, edits) -> dict | None:
        """Every safe fix, to a fixed point (what --fix writes), as one workspace edit."""
        from trainlint.engine import ParseError
        from trainlint.fixer import FixError, fix_text

        if not any(d.fixable(unsafe_fixes=False) for d in edits.diagnostics):
            return None
        path, settings = self._settings(edits.uri)
        if settings.is_excluded(path):
            return None
        try:
            fixed = fix_text(edits.text, path, settings.active_rules(path), settings).text
        except (ParseError, FixError):
            return None
        edit = edits.of_text(fixed) if fixed != edits.text else None
        return None if edit is None else {"title": "trainlint: Fix all safe fixes", "kind": FIX_ALL, "edit": edit}


def _named(params, key: str):
    """The uri of the document `params[key]` names, or None (a message still waiting is read
    before handle() has checked its shape)."""
    document = params.get(key) if isinstance(params, dict) else None
    return document.get("uri") if isinstance(document, dict) else None


def _notebook_file(uri: str) -> bool:
    """A .ipynb opened as a text document: its JSON is not Python (it comes as a notebook document)."""
    return is_notebook(uri_to_path(uri))


def _ours(diagnostics: list[Diagnostic], version: int | None, sent: dict) -> Diagnostic | None:
    """The finding behind a diagnostic the client sends back, if it is still current."""
    data = sent.get("data") or {}
    index = data.get("index")
    if sent.get("source") != "trainlint" or not isinstance(index, int) or data.get("version") != version \
            or not 0 <= index < len(diagnostics):
        return None
    # The same version is linted again when the settings change (a configuration file saved): the
    # index must still name the finding the client shows.
    diag = diagnostics[index]
    return diag if (diag.code, diag.message) == (sent.get("code"), sent.get("message")) else None


def _with_row(text: str, row: int, line: str) -> str:
    """`text` with its 1-based `row` replaced by `line` (the row's line ending kept)."""
    rows = split_lines(text)
    rows[row - 1] = line + rows[row - 1][len(strip_eol(rows[row - 1])):]
    return "".join(rows)


class _TextEdits:
    """The workspace edits of a text document: what a code action changes."""

    def __init__(self, doc: Document, encoding: str) -> None:
        self.doc, self.encoding = doc, encoding
        self.uri, self.text, self.version, self.diagnostics = doc.uri, doc.text, doc.version, doc.diagnostics

    def of_fix(self, diag: Diagnostic) -> dict:
        return {"changes": {self.uri: [
            {"range": _range(self.doc.lines, e.start_loc, e.end_loc, self.encoding), "newText": e.content}
            for e in diag.fix.edits]}}

    def of_noqa(self, diag: Diagnostic) -> dict | None:
        from trainlint.noqa import suppressed_line

        suppressed = suppressed_line(self.text, diag.start.row, diag.code)
        return None if suppressed is None else self.of_text(_with_row(self.text, *suppressed))

    def of_text(self, new_text: str) -> dict:
        return {"changes": {self.uri: [_replacement(self.doc, new_text, self.encoding)]}}


class _NotebookEdits(_TextEdits):
    """The workspace edits of a notebook: made on its program text, then split into its cells
    (`of_noqa` is the text document's: a changed row of the program)."""

    def __init__(self, notebook: NotebookDocument, encoding: str) -> None:
        self.notebook, self.encoding = notebook, encoding
        self.uri, self.text = notebook.uri, notebook.program.text
        self.version, self.diagnostics = notebook.version, notebook.diagnostics

    def of_fix(self, diag: Diagnostic) -> dict | None:
        return self.of_text(apply_edits(self.text, diag.fix.edits))

    def of_text(self, new_text: str) -> dict | None:
        cells = self.notebook.split(new_text)
        if not cells:  # the edit moved a cell boundary (or changed nothing a cell holds)
            return None
        docs = {cell.uri: cell.doc for cell in self.notebook.cells}
        return {"changes": {uri: [_replacement(docs[uri], text, self.encoding)] for uri, text in cells.items()}}


def _replacement(doc: Document, new_text: str, encoding: str) -> dict:
    """The TextEdit that turns the document into `new_text`: the rows that change, whole."""
    first, end, text = changed_lines(doc.text, new_text)
    return {"range": {"start": _row_start(doc, first, encoding), "end": _row_start(doc, end, encoding)},
            "newText": text}


def _row_start(doc: Document, row: int, encoding: str) -> dict:
    """The position where 0-based `row` of the document starts; past its last row, its end."""
    if row < len(doc.lines) or (doc.text.endswith(("\n", "\r")) or not doc.lines):
        return {"line": min(row, len(doc.lines)), "character": 0}
    return {"line": len(doc.lines) - 1, "character": _units(doc.lines[-1], encoding)}


def serve(stdin=None, stdout=None) -> int:
    """Run until the client says `exit`; the exit code the protocol asks for (0 after shutdown)."""
    stdin = stdin or sys.stdin.buffer
    # A thread reads ahead so the server can see what is already waiting (a burst of changes to one
    # document is linted once); messages are still handled one at a time, in order, on this thread.
    pending: queue.Queue = queue.Queue()
    threading.Thread(target=_read_all, args=(stdin, pending), daemon=True).start()
    server = Server(stdout or sys.stdout.buffer, pending)
    while True:
        message = pending.get()
        if isinstance(message, ValueError):  # not JSON, or no Content-Length: say so and read on
            server.send({"id": None, "error": {"code": -32700, "message": f"cannot read the message: {message}"}})
            continue
        if message is None or not server.handle(message):
            break
    return 0 if server.shutting_down else 1


def _read_all(stdin, pending: queue.Queue) -> None:
    """Put every message of `stdin` on `pending` (a ValueError for one that cannot be read), then None."""
    while True:
        try:
            message = read_message(stdin)
        except ValueError as exc:
            pending.put(exc)
            continue
        pending.put(message)
        if message is None:
            return



@click.command(short_help="Run the language server for editors (LSP over stdio).")
def server_command() -> None:
    """Run the language server (LSP over standard input and output) for editors."""
    code = serve()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: the reader thread is blocked in a read of stdin, and the interpreter's shutdown
    # would abort (SIGABRT) on the stdin buffer's lock that thread holds. Nothing is left to clean up.
    os._exit(code)
