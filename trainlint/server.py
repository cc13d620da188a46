"""`trainlint server`: the Language Server Protocol over standard input and output, so editors
show findings as you type and apply fixes as code actions (Ruff's `ruff server`, in small).

What it does: lints every open document on open and change (the buffer, not the file on disk;
changes arrive as incremental edits, and a burst of them is linted once, at its last state)
with the settings of its path (nearest configuration file, re-read on every lint so edits to it
apply at once), publishes the findings as diagnostics, and answers code actions with each
finding's fix (safe ones preferred; unsafe ones and suggestions marked so), a `# noqa` for the
line, and `source.fixAll.trainlint`, which applies the safe fixes as `--fix` would.

Messages are JSON-RPC 2.0 framed with Content-Length headers. Positions: the client's choice
among utf-32, utf-8 and utf-16 (the protocol's default); the engine's columns are characters.
The server never executes the code it checks and keeps running when one document fails.
"""

from __future__ import annotations

import json
import os
import queue
import re
import sys
import threading
import traceback
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

import click

from trainlint import __version__
from trainlint.config import ConfigError, SettingsResolver
from trainlint.diagnostics import Applicability, Diagnostic, Edit, FileError, Location
from trainlint.textpos import split_lines, strip_eol

FIX_ALL = "source.fixAll.trainlint"
# LSP DiagnosticSeverity: 2 is Warning (a finding is advice, not a compile error); 1 is Error.
WARNING, ERROR = 2, 1


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
    diagnostics: list[Diagnostic] = field(default_factory=list)  # what was last published
    lines: list[str] = field(default_factory=list)  # the text's rows, for position conversion

    def __post_init__(self) -> None:
        self.update(self.text, self.version)

    def update(self, text: str, version: int | None) -> None:
        self.text, self.version = text, version
        self.lines = [strip_eol(line) for line in split_lines(text)]

    def offset(self, position: dict, encoding: str) -> int:
        """The character offset in the text of an LSP position (a line past the end is the end)."""
        rows = split_lines(self.text)
        line = position["line"]
        if line >= len(rows):
            return len(self.text)
        return sum(len(row) for row in rows[:line]) + _index(strip_eol(rows[line]), position["character"], encoding)

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
        self.encoding = "utf-16"
        self.shutting_down = False

    # -- protocol plumbing --------------------------------------------------------------

    def send(self, message: dict) -> None:
        write_message(self.out, {"jsonrpc": "2.0", **message})

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def log(self, text: str, kind: int = 1) -> None:
        self.notify("window/logMessage", {"type": kind, "message": text})

    def handle(self, message: dict) -> bool:
        """Handle one message; False when the client said `exit`."""
        method = message.get("method")
        params = message.get("params") or {}
        request_id = message.get("id")
        if method == "exit":
            return False
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
        return {
            "capabilities": {
                "positionEncoding": self.encoding,
                "textDocumentSync": {"openClose": True, "change": 2, "save": True},  # incremental edits
                "codeActionProvider": {"codeActionKinds": ["quickfix", FIX_ALL]},
            },
            "serverInfo": {"name": "trainlint", "version": __version__},
        }

    def on_initialized(self, params: dict) -> None:
        return None

    def on_shutdown(self, params: dict) -> None:
        self.shutting_down = True
        return None

    # -- documents ----------------------------------------------------------------------

    def on_textDocument_didOpen(self, params: dict) -> None:
        item = params["textDocument"]
        self.documents[item["uri"]] = Document(item["uri"], item["text"], item.get("version"))
        self.publish(self.documents[item["uri"]])

    def on_textDocument_didChange(self, params: dict) -> None:
        doc = self.documents.get(params["textDocument"]["uri"])
        changes = params.get("contentChanges") or []
        if doc is None or not changes:
            return
        text = doc.text
        for change in changes:  # in order: each range is in the text the previous ones left
            doc.text = text = doc.apply_change(change, self.encoding)
        doc.update(text, params["textDocument"].get("version"))
        if not self._superseded(doc.uri):
            self.publish(doc)

    def _superseded(self, uri: str) -> bool:
        """Whether a change or close of `uri` is already waiting: then linting now is wasted work
        (a fast typist sends a change per key; the editor shows only the last state's findings)."""
        if self.pending is None:
            return False
        with self.pending.mutex:
            waiting = list(self.pending.queue)
        return any(isinstance(m, dict) and m.get("method") in ("textDocument/didChange", "textDocument/didClose")
                   and ((m.get("params") or {}).get("textDocument") or {}).get("uri") == uri for m in waiting)

    def on_textDocument_didSave(self, params: dict) -> None:
        doc = self.documents.get(params["textDocument"]["uri"])
        if doc is not None:
            self.publish(doc)  # the configuration beside it may have changed

    def on_textDocument_didClose(self, params: dict) -> None:
        uri = params["textDocument"]["uri"]
        self.documents.pop(uri, None)
        self.notify("textDocument/publishDiagnostics", {"uri": uri, "diagnostics": []})

    # -- linting ------------------------------------------------------------------------

    def _settings(self, doc: Document):
        path = uri_to_path(doc.uri)
        return path, SettingsResolver().for_path(path)

    def publish(self, doc: Document) -> None:
        from trainlint.engine import ParseError, lint_text

        published = []
        doc.diagnostics = []
        try:
            path, settings = self._settings(doc)
            if not settings.is_excluded(path):
                doc.diagnostics = lint_text(doc.text, path, settings.active_rules(path), settings)
                published = [self._diagnostic(doc, d, i) for i, d in enumerate(doc.diagnostics)]
        except ParseError as exc:
            published = [self._syntax_error(doc, str(exc))]
        except ConfigError as exc:
            self.log(f"trainlint: {exc}")
            self.notify("window/showMessage", {"type": 1, "message": f"trainlint: {exc}"})
        except RecursionError:
            self.log(f"trainlint: {doc.uri}: too deeply nested to analyse")
        params = {"uri": doc.uri, "diagnostics": published}
        if doc.version is not None:
            params["version"] = doc.version
        self.notify("textDocument/publishDiagnostics", params)

    def _position(self, lines: list[str], row: int, column: int) -> dict:
        """LSP position of a 1-based row and character column."""
        line = lines[row - 1] if 1 <= row <= len(lines) else ""
        return {"line": row - 1, "character": _units(line[: column - 1], self.encoding)}

    def _range(self, lines, start, end) -> dict:
        return {"start": self._position(lines, start.row, start.column),
                "end": self._position(lines, end.row, end.column)}

    def _diagnostic(self, doc: Document, diag: Diagnostic, index: int) -> dict:
        out = {
            "range": self._range(doc.lines, diag.start, diag.end),
            "severity": WARNING,
            "code": diag.code,
            "source": "trainlint",
            "message": diag.message,
            "data": {"index": index, "version": doc.version},
        }
        if diag.url:
            out["codeDescription"] = {"href": diag.url}
        return out

    def _syntax_error(self, doc: Document, message: str) -> dict:
        at = FileError(doc.uri, message).location or Location(1, 1)
        position = self._position(doc.lines, at.row, at.column)
        return {"range": {"start": position, "end": position}, "severity": ERROR, "source": "trainlint",
                "message": message}

    # -- code actions -------------------------------------------------------------------

    def on_textDocument_codeAction(self, params: dict) -> list[dict]:
        doc = self.documents.get(params["textDocument"]["uri"])
        if doc is None:
            return []
        only = (params.get("context") or {}).get("only")
        actions = []
        if not only or "quickfix" in only:
            for sent in (params.get("context") or {}).get("diagnostics") or []:
                diag = self._ours(doc, sent)
                if diag is not None:
                    actions += self._quick_fixes(doc, diag, sent)
        if not only or any(FIX_ALL.startswith(kind) for kind in only):
            fix_all = self._fix_all(doc)
            if fix_all is not None:
                actions.append(fix_all)
        return actions

    def _ours(self, doc: Document, sent: dict) -> Diagnostic | None:
        """The finding behind a diagnostic the client sends back, if it is still current."""
        data = sent.get("data") or {}
        index = data.get("index")
        if sent.get("source") != "trainlint" or not isinstance(index, int) or data.get("version") != doc.version:
            return None
        return doc.diagnostics[index] if 0 <= index < len(doc.diagnostics) else None

    def _quick_fixes(self, doc: Document, diag: Diagnostic, sent: dict) -> list[dict]:
        actions = []
        if diag.fix is not None and diag.fix.edits:
            label = {Applicability.SAFE: "", Applicability.UNSAFE: " (unsafe fix)",
                     Applicability.DISPLAY_ONLY: " (suggestion)"}[diag.fix.applicability]
            actions.append({
                "title": f"trainlint ({diag.code}): {diag.fix.message}{label}",
                "kind": "quickfix",
                "diagnostics": [sent],
                "isPreferred": diag.fix.applicability is Applicability.SAFE,
                "edit": {"changes": {doc.uri: [self._text_edit(doc, e) for e in diag.fix.edits]}},
            })
        noqa = self._noqa_edit(doc, diag)
        if noqa is not None:
            actions.append({"title": f"trainlint ({diag.code}): Disable for this line", "kind": "quickfix",
                            "diagnostics": [sent], "edit": {"changes": {doc.uri: [noqa]}}})
        return actions

    def _text_edit(self, doc: Document, edit: Edit) -> dict:
        return {"range": self._range(doc.lines, edit.start_loc, edit.end_loc), "newText": edit.content}

    def _noqa_edit(self, doc: Document, diag: Diagnostic) -> dict | None:
        from trainlint.noqa import suppressed_line

        new = suppressed_line(doc.text, diag.start.row, diag.code)
        if new is None:
            return None
        lines = doc.lines
        row = diag.start.row
        return {"range": {"start": {"line": row - 1, "character": 0},
                          "end": {"line": row - 1, "character": _units(lines[row - 1], self.encoding)}},
                "newText": new}

    def _fix_all(self, doc: Document) -> dict | None:
        """Every safe fix, to a fixed point, as one edit of the whole document (what --fix writes)."""
        from trainlint.engine import ParseError
        from trainlint.fixer import FixError, fix_text

        path, settings = self._settings(doc)
        if settings.is_excluded(path) or not any(
                d.fix is not None and d.fix.edits and d.fix.applicability is Applicability.SAFE
                for d in doc.diagnostics):
            return None
        try:
            fixed = fix_text(doc.text, path, settings.active_rules(path), settings).text
        except (ParseError, FixError):
            return None
        if fixed == doc.text:
            return None
        lines = doc.lines
        end = {"line": len(lines), "character": 0}
        if lines and not doc.text.endswith(("\n", "\r")):
            end = {"line": len(lines) - 1, "character": _units(lines[-1], self.encoding)}
        return {"title": "trainlint: Fix all safe fixes", "kind": FIX_ALL,
                "edit": {"changes": {doc.uri: [{"range": {"start": {"line": 0, "character": 0}, "end": end},
                                                "newText": fixed}]}}}


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



@click.command()
def server_command() -> None:
    """Run the language server (LSP over standard input and output) for editors."""
    code = serve()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: the reader thread is blocked in a read of stdin, and the interpreter's shutdown
    # would abort (SIGABRT) on the stdin buffer's lock that thread holds. Nothing is left to clean up.
    os._exit(code)
