"""`trainlint server`, the language server, driven as an editor drives it: a real process, real
Content-Length-framed JSON-RPC on its standard input and output."""

import io
import json
import os
import queue
import subprocess
import sys
import threading

import pytest

from _paths import ROOT
from trainlint.server import FIX_ALL, Server, read_message, write_message

SOURCE = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, batch_size=4)  # café\n"
    "for x in loader:\n"
    "    x = x.cuda()\n"
    "    model(x).backward()\n"
    "    opt.step()\n"
)


class Client:
    def __init__(self, cwd, encodings=None, capabilities=None):
        env = dict(os.environ, PYTHONPATH=ROOT)
        self.proc = subprocess.Popen([sys.executable, "-m", "trainlint", "server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.inbox = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        capabilities = dict(capabilities or {}, **({"general": {"positionEncodings": encodings}} if encodings else {}))
        self.init = self.request("initialize", {"processId": None, "rootUri": None, "capabilities": capabilities})
        self.notify("initialized", {})

    def _read(self):
        while True:
            message = read_message(self.proc.stdout)
            self.inbox.put(message)
            if message is None:
                return

    def notify(self, method, params):
        write_message(self.proc.stdin, {"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        """The reply; `self.passed` is what the server sent before it (it handles messages in order)."""
        self.next_id += 1
        write_message(self.proc.stdin, {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.passed = []
        while True:
            message = self.receive()
            if message.get("id") == self.next_id and "method" not in message:
                return message
            self.passed.append(message)

    def receive(self):
        message = self.inbox.get(timeout=60)
        assert message is not None, self.proc.stderr.read().decode()
        return message

    def diagnostics(self, uri):
        while True:
            message = self.receive()
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                return message["params"]

    def close(self):
        assert self.request("shutdown", None)["result"] is None
        self.notify("exit", None)
        assert self.proc.wait(timeout=30) == 0
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def client(tmp_path):
    c = Client(tmp_path)
    yield c
    c.close()


def _open(client, tmp_path, text, name="train.py", version=1):
    uri = (tmp_path / name).as_uri()
    client.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})
    return uri


def _apply(text, edits):
    """Apply LSP TextEdits (utf-16 positions) to text."""
    lines = text.splitlines(keepends=True)

    def offset(pos):
        before = "".join(lines[:pos["line"]])
        line = lines[pos["line"]] if pos["line"] < len(lines) else ""
        units, chars = 0, 0
        while units < pos["character"]:
            units += 2 if ord(line[chars]) > 0xFFFF else 1
            chars += 1
        return len(before) + chars

    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                       reverse=True):
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:start] + edit["newText"] + text[end:]
        lines = text.splitlines(keepends=True)
    return text


def test_findings_are_published_for_the_buffer(client, tmp_path):
    assert client.init["result"]["capabilities"]["positionEncoding"] == "utf-16"
    uri = _open(client, tmp_path, SOURCE)  # nothing on disk: the buffer is what is checked
    params = client.diagnostics(uri)
    assert params["version"] == 1
    by_code = {d["code"]: d for d in params["diagnostics"]}
    assert set(by_code) == {"TL101", "TL102"}
    assert by_code["TL102"]["range"] == {"start": {"line": 2, "character": 9}, "end": {"line": 2, "character": 37}}
    assert by_code["TL102"]["source"] == "trainlint" and by_code["TL102"]["codeDescription"]["href"].endswith("#tl102")
    # An edit re-lints the new text.
    fixed = SOURCE.replace("batch_size=4)", "batch_size=4, num_workers=2, pin_memory=True, prefetch_factor=4)")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": fixed}]})
    params = client.diagnostics(uri)
    assert params["version"] == 2 and {d["code"] for d in params["diagnostics"]} == {"TL108"}


def test_quick_fixes_apply_as_the_engine_fixes(client, tmp_path):
    uri = _open(client, tmp_path, SOURCE)
    diagnostics = client.diagnostics(uri)["diagnostics"]
    tl102 = next(d for d in diagnostics if d["code"] == "TL102")
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": tl102["range"], "context": {"diagnostics": [tl102]}})["result"]
    fix = next(a for a in actions if a["kind"] == "quickfix" and "pin_memory" in a["title"])
    assert fix["isPreferred"] is True
    assert "batch_size=4, pin_memory=True)  # café" in _apply(SOURCE, fix["edit"]["changes"][uri])
    noqa = next(a for a in actions if "Disable for this line" in a["title"])
    assert "# café  # noqa: TL102\n" in _apply(SOURCE, noqa["edit"]["changes"][uri])
    # The unsafe fix is offered, labelled, never preferred (TL101 adds workers to a script whose
    # training runs under a `__main__` guard).
    guarded = SOURCE.replace("for x in loader:\n", "def train():\n    for x in loader:\n").replace(
        "\n    x = ", "\n        x = ").replace("\n    model(", "\n        model(").replace(
        "\n    opt.", "\n        opt.") + "if __name__ == '__main__':\n    train()\n"
    uri = _open(client, tmp_path, guarded, name="guarded.py")
    tl101 = next(d for d in client.diagnostics(uri)["diagnostics"] if d["code"] == "TL101")
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": tl101["range"], "context": {"diagnostics": [tl101]}})["result"]
    unsafe = next(a for a in actions if "num_workers" in a["title"])
    assert unsafe["title"].endswith("(unsafe fix)") and unsafe["isPreferred"] is False
    assert "import os" in _apply(guarded, unsafe["edit"]["changes"][uri])


def test_disable_for_this_line_comments_where_a_continuation_ends(client, tmp_path):
    # The finding's line ends with a backslash and cannot take a comment: the engine reads the one
    # where the statement ends (as Ruff), so that is the line the action writes.
    text = SOURCE.replace("batch_size=4)  # café", "batch_size=4) \\\n    if True else None")
    uri = _open(client, tmp_path, text)
    tl102 = next(d for d in client.diagnostics(uri)["diagnostics"] if d["code"] == "TL102")
    noqa = next(a for a in _actions(client, uri, [tl102]) if "Disable for this line" in a["title"])
    assert "batch_size=4) \\\n    if True else None  # noqa: TL102\n" in _apply(text, noqa["edit"]["changes"][uri])


def test_fix_all_writes_what_fix_writes(client, tmp_path):
    from trainlint.api import fix_source

    uri = _open(client, tmp_path, SOURCE)
    client.diagnostics(uri)
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})["result"]
    assert [a["kind"] for a in actions] == ["source.fixAll.trainlint"]
    assert _apply(SOURCE, actions[0]["edit"]["changes"][uri]) == fix_source(SOURCE, unsafe_fixes=False)


def test_a_stale_diagnostic_gets_no_fix(client, tmp_path):
    uri = _open(client, tmp_path, SOURCE)
    old = next(d for d in client.diagnostics(uri)["diagnostics"] if d["code"] == "TL102")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": "\n" + SOURCE}]})
    client.diagnostics(uri)
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": old["range"], "context": {"diagnostics": [old], "only": ["quickfix"]}})
    assert actions["result"] == []


def test_a_diagnostic_from_before_a_configuration_change_gets_no_fix(client, tmp_path):
    uri = _open(client, tmp_path, SOURCE)
    old = client.diagnostics(uri)["diagnostics"]
    assert [d["code"] for d in old] == ["TL101", "TL102"]
    # Same text, same version, other settings: the first finding is now TL102's.
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL101"]\n')
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in client.diagnostics(uri)["diagnostics"]] == ["TL102"]
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": old[0]["range"],
        "context": {"diagnostics": [old[0]], "only": ["quickfix"]}})
    assert actions["result"] == []


def test_syntax_error_is_one_error_diagnostic(client, tmp_path):
    uri = _open(client, tmp_path, "def broken(:\n    pass\n")
    (diag,) = client.diagnostics(uri)["diagnostics"]
    assert diag["severity"] == 1 and diag["range"]["start"]["line"] == 0 and "syntax error" in diag["message"]


def test_configuration_of_the_path_applies_and_is_reread(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL101"]\n')
    uri = _open(client, tmp_path, SOURCE)
    assert {d["code"] for d in client.diagnostics(uri)["diagnostics"]} == {"TL102"}
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL102"]\n')
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert {d["code"] for d in client.diagnostics(uri)["diagnostics"]} == {"TL101"}
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL999"]\n')
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    while True:  # a broken configuration is shown to the user; the server goes on
        message = client.receive()
        if message.get("method") == "window/showMessage":
            assert "TL999" in message["params"]["message"]
            break
    assert client.diagnostics(uri)["diagnostics"] == []


def test_saving_under_new_settings_relints_the_other_open_documents(client, tmp_path):
    first = _open(client, tmp_path, SOURCE)
    other = _open(client, tmp_path, SOURCE, name="other.py")
    assert {d["code"] for d in client.diagnostics(other)["diagnostics"]} == {"TL101", "TL102"}
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL101"]\n')
    client.notify("textDocument/didSave", {"textDocument": {"uri": first}})
    assert {d["code"] for d in client.diagnostics(first)["diagnostics"]} == {"TL102"}
    assert {d["code"] for d in client.diagnostics(other)["diagnostics"]} == {"TL102"}


def test_a_configuration_changed_on_disk_relints_the_open_documents(tmp_path):
    client = Client(tmp_path, capabilities={"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}})
    try:
        register = client.receive()  # the server asks to be told of configuration files
        assert register["method"] == "client/registerCapability"
        (registration,) = register["params"]["registrations"]
        assert registration["method"] == "workspace/didChangeWatchedFiles"
        assert {w["globPattern"] for w in registration["registerOptions"]["watchers"]} == {
            "**/pyproject.toml", "**/trainlint.toml"}
        write_message(client.proc.stdin, {"jsonrpc": "2.0", "id": register["id"], "result": None})
        uri = _open(client, tmp_path, SOURCE)
        assert {d["code"] for d in client.diagnostics(uri)["diagnostics"]} == {"TL101", "TL102"}
        (tmp_path / "trainlint.toml").write_text('ignore = ["TL102"]\n')
        client.notify("workspace/didChangeWatchedFiles",
                      {"changes": [{"uri": (tmp_path / "trainlint.toml").as_uri(), "type": 1}]})
        assert {d["code"] for d in client.diagnostics(uri)["diagnostics"]} == {"TL101"}
    finally:
        client.close()


def test_closing_clears_the_findings(client, tmp_path):
    uri = _open(client, tmp_path, SOURCE)
    assert client.diagnostics(uri)["diagnostics"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri)["diagnostics"] == []


def test_positions_in_the_encoding_the_client_prefers(tmp_path):
    text = 'from torch.utils.data import DataLoader\ny = "😀"; loader = DataLoader(ds)\n'
    # The call starts after 18 characters: 19 UTF-16 units (the emoji is a surrogate pair), 21 UTF-8 bytes.
    for encodings, character in ((["utf-8", "utf-32", "utf-16"], 18), (["utf-8"], 21), (None, 19)):
        client = Client(tmp_path, encodings)
        try:
            uri = _open(client, tmp_path, text)
            diag = next(d for d in client.diagnostics(uri)["diagnostics"] if d["code"] == "TL101")
            assert diag["range"]["start"] == {"line": 1, "character": character}, encodings
        finally:
            client.close()


def test_unknown_requests_get_an_error_and_the_server_goes_on(client, tmp_path):
    reply = client.request("workspace/symbol", {"query": "x"})
    assert reply["error"]["code"] == -32601
    uri = _open(client, tmp_path, SOURCE)
    assert client.diagnostics(uri)["diagnostics"]


def test_a_message_that_is_not_json_gets_a_parse_error(client, tmp_path):
    body = b"{not json"
    client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    client.proc.stdin.flush()
    reply = client.receive()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    uri = _open(client, tmp_path, SOURCE)  # and the server reads on
    assert client.diagnostics(uri)["diagnostics"]


def _change(uri, version, changes):
    return {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}


def _edit(start, end, text):
    return {"range": {"start": {"line": start[0], "character": start[1]},
                      "end": {"line": end[0], "character": end[1]}}, "text": text}


LOOP = "for x in loader:\r\n    x = x.cuda()\r\n    model(x).backward()\r\n    opt.step()\r\n"


def test_incremental_edits_in_utf16_rebuild_the_buffer(client, tmp_path):
    assert client.init["result"]["capabilities"]["textDocumentSync"]["change"] == 2
    text = 'from torch.utils.data import DataLoader\r\ny = "😀"; loader = DataLoader(ds)\r\n'
    uri = _open(client, tmp_path, text)
    assert [d["code"] for d in client.diagnostics(uri)["diagnostics"]] == ["TL101"]
    # One notification, three edits applied in order: insert after the emoji (a surrogate pair: 2
    # units), replace `ds` (units 31-33 of line 1), and an edit spanning the line break.
    client.notify("textDocument/didChange", _change(uri, 2, [
        _edit((1, 7), (1, 7), "!"),
        _edit((1, 31), (1, 33), "data, num_workers=4, prefetch_factor=4"),
        _edit((0, 39), (1, 0), "\r\nimport torch\r\n"),
    ]))
    published = client.diagnostics(uri)
    assert published["version"] == 2 and published["diagnostics"] == []
    # The server's buffer is now exactly the edited text: its whole-document fix-all sees it.
    client.notify("textDocument/didChange", _change(uri, 3, [_edit((3, 0), (3, 0), LOOP)]))
    assert [d["code"] for d in client.diagnostics(uri)["diagnostics"]] == ["TL102"]
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": [FIX_ALL]}})["result"]
    buffer = ('from torch.utils.data import DataLoader\r\nimport torch\r\n'
              'y = "😀!"; loader = DataLoader(data, num_workers=4, prefetch_factor=4)\r\n' + LOOP)
    (edit,) = actions[0]["edit"]["changes"][uri]
    assert _apply(buffer, [edit]) == buffer.replace("prefetch_factor=4)", "prefetch_factor=4, pin_memory=True)").replace(
        "x.cuda()", "x.cuda(non_blocking=True)")
    # Only the rows that change are replaced (an editor keeps its cursor and folds elsewhere).
    assert edit["range"] == {"start": {"line": 2, "character": 0}, "end": {"line": 5, "character": 0}}


def test_a_burst_of_changes_is_linted_once_at_its_last_state(client, tmp_path):
    uri = _open(client, tmp_path, "from torch.utils.data import DataLoader\n")
    assert client.diagnostics(uri)["diagnostics"] == []
    line = "loader = DataLoader(ds)\n"
    burst = b"".join(
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body) for body in (
            json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange",
                        "params": _change(uri, version, [_edit((version - 1, 0), (version - 1, 0), line)])}).encode()
            for version in range(2, 52)))
    client.proc.stdin.write(burst)  # fifty keystrokes' worth of changes, all waiting at once
    client.proc.stdin.flush()
    versions = []
    while not versions or versions[-1] != 51:
        published = client.diagnostics(uri)
        versions.append(published["version"])
    assert len(published["diagnostics"]) == 50  # every line of the final text: nothing was lost
    assert versions == sorted(versions) and len(versions) < 50, versions


def test_a_change_with_a_later_change_waiting_is_not_linted():
    out = io.BytesIO()
    pending = queue.Queue()
    server = Server(out, pending)
    server.on_textDocument_didOpen({"textDocument": {"uri": "file:///t.py", "version": 1, "text": ""}})
    out.seek(0), out.truncate()
    later = {"method": "textDocument/didChange", "params": _change("file:///t.py", 3, [{"text": "x = 1\n"}])}
    pending.put(later)
    server.on_textDocument_didChange(_change("file:///t.py", 2, [{"text": "import torch\n"}]))
    assert out.getvalue() == b"" and server.documents["file:///t.py"].text == "import torch\n"
    pending.get()
    server.on_textDocument_didChange(later["params"])
    assert b'"version": 3' in out.getvalue()


# -- notebooks: LSP 3.17 notebook documents, cells published one by one ---------------------

CELLS = [
    (1, "markdown", "# Training\nNotes on `DataLoader(ds)`."),
    (2, "python", "import torch\nfrom torch.utils.data import DataLoader\n%matplotlib inline\n"
                  "loader = DataLoader(ds, batch_size=4)"),
    (2, "python", "for x in loader:\n    x = x.cuda()\n    model(x).backward()\n    opt.step()"),
]


def _open_notebook(client, tmp_path, cells=CELLS):
    uri = (tmp_path / "train.ipynb").as_uri()
    cell_uris = [f"vscode-notebook-cell:{tmp_path / 'train.ipynb'}#C{i}" for i in range(len(cells))]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": uri, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": kind, "document": c} for c, (kind, _l, _t) in zip(cell_uris, cells)]},
        "cellTextDocuments": [{"uri": c, "languageId": language, "version": 1, "text": text}
                              for c, (_k, language, text) in zip(cell_uris, cells)]})
    return uri, cell_uris


def _cell_diagnostics(client, cell_uris):
    """The diagnostics published for each cell, in cell order (one publish per cell per lint)."""
    got = {}
    while len(got) < len(cell_uris):
        message = client.receive()
        if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] in cell_uris:
            got[message["params"]["uri"]] = message["params"]["diagnostics"]
    return [got[c] for c in cell_uris]


def _actions(client, uri, diagnostics, only=None):
    context = {"diagnostics": diagnostics, **({"only": only} if only else {})}
    return client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": context})["result"]


def test_notebook_findings_are_published_on_their_cells(client, tmp_path):
    assert client.init["result"]["capabilities"]["notebookDocumentSync"]["notebookSelector"]
    _uri, cell_uris = _open_notebook(client, tmp_path)
    markdown, first, second = _cell_diagnostics(client, cell_uris)
    assert markdown == [] and second == []
    # The loader of cell 2 is iterated in cell 3: one program, found in the cell that builds it, at
    # the cell's own row (the magic line before it counts as a row).
    assert {d["code"] for d in first} == {"TL101", "TL102"}
    tl102 = next(d for d in first if d["code"] == "TL102")
    assert tl102["range"] == {"start": {"line": 3, "character": 9}, "end": {"line": 3, "character": 37}}


def test_notebook_quick_fixes_and_fix_all_edit_the_cells(client, tmp_path):
    _uri, cell_uris = _open_notebook(client, tmp_path)
    _markdown, first, _second = _cell_diagnostics(client, cell_uris)
    texts = {c: text for c, (_k, _l, text) in zip(cell_uris, CELLS)}
    tl102 = next(d for d in first if d["code"] == "TL102")
    actions = _actions(client, cell_uris[1], [tl102], ["quickfix"])
    fix = next(a for a in actions if "pin_memory" in a["title"])
    (edit,) = fix["edit"]["changes"][cell_uris[1]]
    assert list(fix["edit"]["changes"]) == [cell_uris[1]]
    assert edit["range"]["start"]["line"] == 3  # only the loader's row: the magic above it is untouched
    assert _apply(texts[cell_uris[1]], [edit]).endswith("%matplotlib inline\nloader = DataLoader(ds, batch_size=4, pin_memory=True)")
    noqa = next(a for a in actions if "Disable for this line" in a["title"])
    assert _apply(texts[cell_uris[1]], noqa["edit"]["changes"][cell_uris[1]]).endswith("batch_size=4)  # noqa: TL102")
    # The unsafe fix adds `import os` (isort's sections) at the top of the first code cell, not the markdown one.
    tl101 = next(d for d in first if d["code"] == "TL101")
    unsafe = next(a for a in _actions(client, cell_uris[1], [tl101], ["quickfix"]) if "num_workers" in a["title"])
    assert _apply(texts[cell_uris[1]], unsafe["edit"]["changes"][cell_uris[1]]).startswith("import os\n\nimport torch\n")
    # Fix-all (asked from any cell) edits every cell its fixes reach, as `--fix` writes the file.
    (fix_all,) = _actions(client, cell_uris[2], [], [FIX_ALL])
    changes = fix_all["edit"]["changes"]
    assert set(changes) == {cell_uris[1], cell_uris[2]}
    assert _apply(texts[cell_uris[1]], changes[cell_uris[1]]).endswith("DataLoader(ds, batch_size=4, pin_memory=True)")
    # ...to a fixed point: with memory pinned, the loop's copy in the next cell is made asynchronous.
    assert _apply(texts[cell_uris[2]], changes[cell_uris[2]]) == texts[cell_uris[2]].replace(
        "x.cuda()", "x.cuda(non_blocking=True)")


def test_notebook_edits_structure_changes_and_close(client, tmp_path):
    uri, cell_uris = _open_notebook(client, tmp_path)
    _cell_diagnostics(client, cell_uris)
    # Typing in cell 2 (incremental, as VS Code sends it) re-lints the whole notebook.
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": uri, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": cell_uris[1], "version": 2}, "changes": [
            _edit((3, 36), (3, 36), ", num_workers=2, pin_memory=True, prefetch_factor=4")]}]}}})
    _markdown, first, second = _cell_diagnostics(client, cell_uris)
    assert first == [] and [d["code"] for d in second] == ["TL108"]
    # A new cell inserted before the loop, and the markdown cell deleted: findings follow the cells.
    new = cell_uris[0].replace("#C0", "#C9")
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": uri, "version": 3},
        "change": {"cells": {"structure": {
            "array": {"start": 0, "deleteCount": 1},
            "didClose": [{"uri": cell_uris[0]}]}}}})
    assert _cell_diagnostics(client, [cell_uris[0]]) == [[]]  # the deleted cell is cleared
    _first, second = _cell_diagnostics(client, cell_uris[1:])
    assert [d["code"] for d in second] == ["TL108"]
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": uri, "version": 4},
        "change": {"cells": {"structure": {
            "array": {"start": 1, "deleteCount": 0, "cells": [{"kind": 2, "document": new}]},
            "didOpen": [{"uri": new, "languageId": "python", "version": 1, "text": "features = DataLoader(ds)"}]}}}})
    first, added, second = _cell_diagnostics(client, [cell_uris[1], new, cell_uris[2]])
    assert first == [] and [d["code"] for d in added] == ["TL101"] and [d["code"] for d in second] == ["TL108"]
    # A syntax error is shown in its cell, at the cell's row.
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": uri, "version": 5},
        "change": {"cells": {"textContent": [{"document": {"uri": cell_uris[2], "version": 2},
                                              "changes": [{"text": "for x in loader:\n    x = (\n"}]}]}}})
    _first, _added, (error,) = _cell_diagnostics(client, [cell_uris[1], new, cell_uris[2]])
    assert error["severity"] == 1 and error["range"]["start"]["line"] == 1 and "line 2," in error["message"]
    client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": uri},
                                                 "cellTextDocuments": [{"uri": c} for c in (cell_uris[1], new, cell_uris[2])]})
    assert _cell_diagnostics(client, [cell_uris[1], new, cell_uris[2]]) == [[], [], []]


def test_a_notebook_opened_as_text_is_not_read_as_python(client, tmp_path):
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": (tmp_path / "train.ipynb").as_uri(), "languageId": "json", "version": 1, "text": '{"cells": []}'}})
    uri = _open(client, tmp_path, "import torch\n")
    assert client.diagnostics(uri)["diagnostics"] == []  # the first publish is the .py file's: none for the JSON


def test_hover_on_a_rule_code_in_a_comment_explains_the_rule(client, tmp_path):
    assert client.init["result"]["capabilities"]["hoverProvider"] is True
    text = "x = 1  # noqa: E501, TL104\ny = 'TL104'\n"
    uri = _open(client, tmp_path, text)
    client.diagnostics(uri)

    def hover(line, character):
        return client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                     "position": {"line": line, "character": character}})["result"]

    shown = hover(0, 23)
    assert shown["contents"]["kind"] == "markdown"
    assert shown["contents"]["value"].startswith("# dataloader-shallow-prefetch (TL104)")
    assert shown["range"] == {"start": {"line": 0, "character": 21}, "end": {"line": 0, "character": 26}}
    assert hover(0, 17) is None  # another tool's code
    assert hover(1, 7) is None  # not in a comment
    assert hover(5, 0) is None  # past the end


# -- pull diagnostics (LSP 3.17 textDocument/diagnostic) -----------------------------------

PULLS = {"textDocument": {"diagnostic": {"dynamicRegistration": False}}}


@pytest.fixture
def puller(tmp_path):
    c = Client(tmp_path, capabilities=PULLS)
    yield c
    c.close()


def _pull(client, uri, previous=None):
    params = {"textDocument": {"uri": uri}, **({"previousResultId": previous} if previous else {})}
    return client.request("textDocument/diagnostic", params)["result"]


def _pushed(client):
    return [m["params"]["uri"] for m in client.passed if m.get("method") == "textDocument/publishDiagnostics"]


def test_a_client_that_pulls_gets_the_findings_by_pull_only(puller, tmp_path):
    assert puller.init["result"]["capabilities"]["diagnosticProvider"] == {
        "interFileDependencies": False, "workspaceDiagnostics": False}
    uri = _open(puller, tmp_path, SOURCE)
    report = _pull(puller, uri)
    assert _pushed(puller) == []  # the open was linted, not pushed: the client would show both
    assert report["kind"] == "full" and report["resultId"]
    by_code = {d["code"]: d for d in report["items"]}
    assert set(by_code) == {"TL101", "TL102"}  # as pushed: the same diagnostics, ranges and all
    assert by_code["TL102"]["range"] == {"start": {"line": 2, "character": 9}, "end": {"line": 2, "character": 37}}
    # Nothing changed: the client keeps what it shows.
    assert _pull(puller, uri, report["resultId"]) == {"kind": "unchanged", "resultId": report["resultId"]}
    # An edit (and a save) pushes nothing; the next pull has the new findings under a new id.
    fixed = SOURCE.replace("batch_size=4)", "batch_size=4, num_workers=2, pin_memory=True, prefetch_factor=4)")
    puller.notify("textDocument/didChange", _change(uri, 2, [{"text": fixed}]))
    puller.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    after = _pull(puller, uri, report["resultId"])
    assert _pushed(puller) == []
    assert after["kind"] == "full" and after["resultId"] != report["resultId"]
    assert [d["code"] for d in after["items"]] == ["TL108"]
    # An edit that leaves the same findings (at the same version-tagged places) is a new report too:
    # the diagnostics' data names the version a code action must match.
    puller.notify("textDocument/didChange", _change(uri, 3, [_edit((6, 14), (6, 14), " ")]))
    again = _pull(puller, uri, after["resultId"])
    assert again["kind"] == "full" and again["resultId"] != after["resultId"]


def test_a_code_action_on_a_pulled_diagnostic_fixes_it(puller, tmp_path):
    uri = _open(puller, tmp_path, SOURCE)
    tl102 = next(d for d in _pull(puller, uri)["items"] if d["code"] == "TL102")
    actions = _actions(puller, uri, [tl102], ["quickfix"])
    fix = next(a for a in actions if "pin_memory" in a["title"])
    assert fix["isPreferred"] is True and fix["diagnostics"] == [tl102]
    assert "batch_size=4, pin_memory=True)  # café" in _apply(SOURCE, fix["edit"]["changes"][uri])
    # ...and none once the text has moved on under it.
    puller.notify("textDocument/didChange", _change(uri, 2, [{"text": "\n" + SOURCE}]))
    assert _actions(puller, uri, [tl102], ["quickfix"]) == []


def test_a_pull_for_a_closed_or_unknown_document_is_an_empty_report(puller, tmp_path):
    uri = _open(puller, tmp_path, SOURCE)
    assert _pull(puller, uri)["items"]
    puller.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert _pull(puller, uri) == {"kind": "full", "items": []}
    assert _pushed(puller) == []  # no clearing push for what the client pulled
    assert _pull(puller, (tmp_path / "never.py").as_uri()) == {"kind": "full", "items": []}


def test_a_configuration_change_asks_a_pulling_client_to_pull_again(tmp_path):
    client = Client(tmp_path, capabilities={**PULLS, "workspace": {
        "diagnostics": {"refreshSupport": True}, "didChangeWatchedFiles": {"dynamicRegistration": True}}})

    def refreshed():
        """Whether the server asked for a pull of everything; answered as a client would."""
        asks = [m for m in client.passed if m.get("method") == "workspace/diagnostic/refresh"]
        for ask in asks:
            write_message(client.proc.stdin, {"jsonrpc": "2.0", "id": ask["id"], "result": None})
        return len(asks) == 1

    try:
        register = client.receive()
        write_message(client.proc.stdin, {"jsonrpc": "2.0", "id": register["id"], "result": None})
        uri = _open(client, tmp_path, SOURCE)
        other = _open(client, tmp_path, SOURCE, name="other.py")
        first = _pull(client, uri)
        # On disk (the client watches the files): every open document is linted with the new settings.
        (tmp_path / "trainlint.toml").write_text('ignore = ["TL102"]\n')
        client.notify("workspace/didChangeWatchedFiles",
                      {"changes": [{"uri": (tmp_path / "trainlint.toml").as_uri(), "type": 1}]})
        second = _pull(client, uri, first["resultId"])
        assert refreshed() and _pushed(client) == []
        assert second["kind"] == "full" and [d["code"] for d in second["items"]] == ["TL101"]
        # Saved beside a document: its findings change, and so may every other's.
        (tmp_path / "trainlint.toml").write_text('ignore = ["TL101"]\n')
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert [d["code"] for d in _pull(client, other)["items"]] == ["TL102"]
        assert refreshed() and _pushed(client) == []
        # A change on disk that changes no finding asks for nothing.
        (tmp_path / "trainlint.toml").write_text('ignore = ["TL101"]  # the same settings\n')
        client.notify("workspace/didChangeWatchedFiles",
                      {"changes": [{"uri": (tmp_path / "trainlint.toml").as_uri(), "type": 2}]})
        third = _pull(client, uri)
        assert not refreshed() and [d["code"] for d in third["items"]] == ["TL102"]
    finally:
        client.close()


def test_a_pulling_client_gets_notebook_cells_pushed(puller, tmp_path):
    uri, cell_uris = _open_notebook(puller, tmp_path)
    _markdown, first, _second = _cell_diagnostics(puller, cell_uris)
    assert {d["code"] for d in first} == {"TL101", "TL102"}
    # A pull for a cell is empty: the pushed findings stand, shown once.
    assert _pull(puller, cell_uris[1]) == {"kind": "full", "items": []}
    # An edit in one cell re-lints the notebook as one program and pushes every cell, as for any client.
    puller.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": uri, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": cell_uris[1], "version": 2}, "changes": [
            _edit((3, 36), (3, 36), ", num_workers=2, pin_memory=True, prefetch_factor=4")]}]}}})
    _markdown, first, second = _cell_diagnostics(puller, cell_uris)
    assert first == [] and [d["code"] for d in second] == ["TL108"]
    # A code action on a pushed cell finding works as for a client that does not pull.
    (tl108,) = second
    assert any("non_blocking" in a["title"] for a in _actions(puller, cell_uris[2], [tl108], ["quickfix"]))


def test_a_client_that_does_not_pull_is_offered_no_pull(client):
    assert "diagnosticProvider" not in client.init["result"]["capabilities"]


def test_a_pull_after_a_change_that_was_not_linted_lints_it():
    out = io.BytesIO()
    pending = queue.Queue()
    server = Server(out, pending)
    server.on_initialize({"capabilities": PULLS})
    server.on_textDocument_didOpen({"textDocument": {"uri": "file:///t.py", "version": 1, "text": ""}})
    pending.put({"method": "textDocument/didChange", "params": _change("file:///t.py", 3, [{"text": "x = 1\n"}])})
    server.on_textDocument_didChange(_change("file:///t.py", 2, [{"text": SOURCE}]))  # superseded: not linted
    report = server.on_textDocument_diagnostic({"textDocument": {"uri": "file:///t.py"}})
    assert {d["code"] for d in report["items"]} == {"TL101", "TL102"}  # the text as it is, not as it was opened
    assert {d["data"]["version"] for d in report["items"]} == {2}
    assert out.getvalue() == b""  # nothing pushed


# -- suppression comments that do not do what they look like ------------------------------

PROBLEMS = ("import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, batch_size=4)  # noqa TL101\n"
            "x = 1  # trainlint: noqa\n")


def test_suppression_problems_are_published_as_warnings(client, tmp_path):
    """`# noqa TL101` without its colon and a file-level `# trainlint: noqa` after code: the check
    run warns of them on stderr, the editor showed nothing. Now a warning on the comment, no code,
    and no code action offered for it."""
    uri = _open(client, tmp_path, PROBLEMS)
    notes = [d for d in client.diagnostics(uri)["diagnostics"] if "code" not in d]
    assert [(n["severity"], n["source"], n["range"]) for n in notes] == [
        (2, "trainlint", {"start": {"line": 2, "character": 39}, "end": {"line": 2, "character": 45}}),
        (2, "trainlint", {"start": {"line": 3, "character": 7}, "end": {"line": 3, "character": 24}})]
    assert notes[0]["message"].startswith("Invalid `# noqa` directive: expected `:`")
    assert notes[1]["message"].startswith("Unexpected `# trainlint: noqa` directive, after code: it suppresses nothing")
    assert _actions(client, uri, notes, ["quickfix"]) == []


def test_suppression_problems_are_left_to_the_audit_rule_when_it_runs(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nextend-select = ["TL001"]\n')
    uri = _open(client, tmp_path, PROBLEMS)
    diagnostics = client.diagnostics(uri)["diagnostics"]
    assert all("code" in d for d in diagnostics)
    assert [d["range"]["start"]["line"] for d in diagnostics if d["code"] == "TL001"] == [2, 3]


def test_suppression_problems_are_published_on_their_notebook_cell(client, tmp_path):
    _uri, cell_uris = _open_notebook(client, tmp_path, [(2, "python", "import torch"),
                                                        (2, "python", "y = 2\nx = 1  # noqa TL101")])
    first, second = _cell_diagnostics(client, cell_uris)
    assert first == []
    assert [(d["range"]["start"], "code" in d) for d in second] == [({"line": 1, "character": 7}, False)]


def test_a_message_of_another_shape_gets_an_error_and_the_server_goes_on(client, tmp_path):
    # A JSON array (a JSON-RPC batch, which LSP does not have) ended the server with an
    # AttributeError; a method that is no name, or params that are no object, are refused too.
    for body, code in ((b"[1, 2]", -32600), (b'{"jsonrpc": "2.0", "id": 7, "method": ["x"]}', -32600),
                       (b'{"jsonrpc": "2.0", "id": 8, "method": "textDocument/hover", "params": [1]}', -32602)):
        client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        client.proc.stdin.flush()
        reply = client.receive()
        assert reply["error"]["code"] == code, reply
    uri = _open(client, tmp_path, SOURCE)  # and the server reads on
    assert client.diagnostics(uri)["diagnostics"]
