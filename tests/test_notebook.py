"""Jupyter notebooks: read as the Python of their code cells, findings placed by cell, fixes
written back into the JSON with everything else kept. Real files, the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainlint.notebook import CellMap, Notebook, NotebookError
from trainlint.notebook_json import source_spans
from trainlint.textpos import split_lines

TRAIN_CELL = [
    "%%time\n",
    "for x, y in loader:\n",
    "    x = x.cuda()\n",
    "    if debug:\n",
    "        %time y = y.cuda()\n",
    "    loss = model(x, y)\n",
    "    loss.backward()\n",
    "    opt.step()\n",
    "    print(f\"loss {loss.item()}\")",
]


def notebook(cells=None, language="python") -> dict:
    cells = cells if cells is not None else [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n", "What does it do?"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
         "source": ["%matplotlib inline\n", "!pip install -q \\\n", "    torch\n", "import torch\n",
                    "from torch.utils.data import DataLoader"]},
        {"cell_type": "code", "execution_count": 2, "metadata": {"tags": ["keep"]},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["café ok\n"]}],
         "source": ["loader = DataLoader(ds, batch_size=32, shuffle=True)\n", "DataLoader?"]},
        {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [], "source": TRAIN_CELL},
        {"cell_type": "code", "execution_count": 4, "metadata": {}, "outputs": [], "source": ["%%bash\n", "echo !hi"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": "note = '''\n!not a magic, a string\n'''\n"},
    ]
    return {"cells": cells,
            "metadata": {"kernelspec": {"display_name": "K", "language": language, "name": "k"},
                         "language_info": {"name": language}},
            "nbformat": 4, "nbformat_minor": 5}


def write(path, data, indent=1) -> str:
    text = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def trainlint(args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "trainlint", *args, "--no-cache"], cwd=cwd, input=stdin,
                          capture_output=True, text=True)


def test_the_python_of_a_notebook_sets_ipython_syntax_aside():
    nb = Notebook.parse(json.dumps(notebook()))
    assert nb.text == (
        "# trainlint: cell 2\n"
        "pass  # trainlint: magic 0\n"
        "pass  # trainlint: magic 1\n"
        "# trainlint: magic 2\n"  # the continuation of `!pip install -q \`
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "# trainlint: cell 3\n"
        "loader = DataLoader(ds, batch_size=32, shuffle=True)\n"
        "pass  # trainlint: magic 3\n"
        "# trainlint: cell 4\n"
        "pass  # trainlint: magic 4\n"
        "for x, y in loader:\n"
        "    x = x.cuda()\n"
        "    if debug:\n"
        "        pass  # trainlint: magic 5\n"
        "    loss = model(x, y)\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    print(f\"loss {loss.item()}\")\n"
        # cell 5 is %%bash: not read. Cell 6 parses as Python: its `!` line is in a string.
        "# trainlint: cell 6\n"
        "note = '''\n!not a magic, a string\n'''\n"
    )
    assert CellMap.of(nb.text).locate(19) == (4, 9)
    assert Notebook.parse(json.dumps(notebook(language="R"))).text == ""


def test_unchanged_text_renders_the_same_json_and_magics_follow_their_block():
    raw = json.dumps(notebook(), indent=1, ensure_ascii=False) + "\n"
    nb = Notebook.parse(raw)
    assert nb.render(nb.text) == raw
    # A fix that wraps the block re-indents the magic with it.
    wrapped = nb.text.replace("    if debug:\n        pass  # trainlint: magic 5\n",
                              "    with ctx:\n        if debug:\n            pass  # trainlint: magic 5\n")
    cell = json.loads(nb.render(wrapped))["cells"][3]["source"]
    assert cell[3:6] == ["    with ctx:\n", "        if debug:\n", "            %time y = y.cuda()\n"]
    with pytest.raises(NotebookError, match="cell boundary"):
        nb.render(nb.text.replace("# trainlint: cell 3\n", ""))


def test_findings_are_placed_by_cell(tmp_path):
    write(tmp_path / "train.ipynb", notebook())
    proc = trainlint(["check", "train.ipynb"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "train.ipynb:cell 3:1:10: TL101 " in proc.stdout
    assert "train.ipynb:cell 4:9:19: TL201 " in proc.stdout
    full = trainlint(["check", "--output-format", "full", "--select", "TL201", "train.ipynb"], tmp_path).stdout
    assert '  9 |     print(f"loss {loss.item()}")' in full
    fix_rows = trainlint(["check", "--output-format", "full", "--select", "TL101", "--unsafe-fixes", "train.ipynb"],
                         tmp_path).stdout
    assert "  2:4 + import os\n" in fix_rows  # a fix's rows are numbered cell:row too
    assert "  3:1 - loader = DataLoader(ds, batch_size=32, shuffle=True)\n" in fix_rows
    items = json.loads(trainlint(["check", "--output-format", "json", "train.ipynb"], tmp_path).stdout)
    tl201 = next(i for i in items if i["code"] == "TL201")
    assert (tl201["cell"], tl201["location"], tl201["noqa_row"]) == (4, {"row": 9, "column": 19}, 9)
    tl101 = next(i for i in items if i["code"] == "TL101")
    import_os = tl101["fix"]["edits"][0]  # `import os` goes into the cell with the imports
    assert import_os["cell"] == 2 and "import" in import_os["content"]
    github = trainlint(["check", "--output-format", "github", "--select", "TL201", "train.ipynb"], tmp_path).stdout
    assert "::TL201 cell 4, line 9: " in github
    grouped = trainlint(["check", "--output-format", "grouped", "train.ipynb"], tmp_path).stdout
    assert "train.ipynb:\n  cell 3:1:10 TL101 " in grouped and "\n  cell 4:9:19 TL201 " in grouped
    pylint = trainlint(["check", "--output-format", "pylint", "--select", "TL201", "train.ipynb"], tmp_path).stdout
    assert pylint.startswith("train.ipynb:") and ": [TL201] cell 4, line 9: " in pylint


def test_fixes_are_written_into_the_cells_and_nothing_else_changes(tmp_path):
    before = write(tmp_path / "train.ipynb", notebook())
    os.chmod(tmp_path / "train.ipynb", 0o640)
    proc = trainlint(["check", "--fix", "--unsafe-fixes", "train.ipynb"], tmp_path)
    assert "(5 fixed, 1 remaining)" in proc.stdout, proc.stdout + proc.stderr
    after = (tmp_path / "train.ipynb").read_text(encoding="utf-8")
    old, new = json.loads(before), json.loads(after)
    assert [c["source"] for c in new["cells"]][:2] == [c["source"] for c in old["cells"]][:1] + [
        ["%matplotlib inline\n", "!pip install -q \\\n", "    torch\n", "import os\n", "\n", "import torch\n",
         "from torch.utils.data import DataLoader"]]
    assert new["cells"][2]["source"][-1] == "DataLoader?"  # the help line is back, still without a newline
    assert new["cells"][3]["source"][2] == "    x = x.cuda(non_blocking=True)\n"
    assert new["cells"][3]["source"][4] == "        %time y = y.cuda()\n"
    for o, n in zip(old["cells"], new["cells"]):  # outputs, metadata, other cells: as they were
        assert {k: v for k, v in o.items() if k != "source"} == {k: v for k, v in n.items() if k != "source"}
    assert old["cells"][4:] == new["cells"][4:] and old["metadata"] == new["metadata"]
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert all(line.startswith('    "') for line in changed), changed  # only rows of sources changed
    assert oct(os.stat(tmp_path / "train.ipynb").st_mode & 0o777) == "0o640"
    again = trainlint(["check", "--fix", "--unsafe-fixes", "train.ipynb"], tmp_path)
    assert (tmp_path / "train.ipynb").read_text(encoding="utf-8") == after and "Found 1 error." in again.stdout


def test_diff_is_a_patch_of_the_notebook_file(tmp_path):
    before = write(tmp_path / "train.ipynb", notebook(), indent=2)
    proc = trainlint(["check", "--diff", "train.ipynb"], tmp_path)
    assert proc.returncode == 1 and proc.stdout.startswith("--- train.ipynb\n+++ train.ipynb\n")
    assert '-        "    x = x.cuda()\\n",\n+        "    x = x.cuda(non_blocking=True)\\n",\n' in proc.stdout
    assert (tmp_path / "train.ipynb").read_text(encoding="utf-8") == before
    subprocess.run(["git", "apply", "-p0", "-"], input=proc.stdout, cwd=tmp_path, text=True, check=True)
    assert trainlint(["check", "--diff", "train.ipynb"], tmp_path).stdout == ""


def test_folders_include_notebooks_and_bad_ones_are_named(tmp_path):
    write(tmp_path / "a.ipynb", notebook())
    (tmp_path / "b.ipynb").write_text("{not json", encoding="utf-8")
    (tmp_path / "c.ipynb").write_text('{"cells": 3}', encoding="utf-8")
    # A code cell's source that is not text was read with str(): `null` was checked as `None`,
    # and a list holding a number stopped the run with an internal error.
    for name, source in (("d", None), ("e", ["x = 1\n", 2])):
        write(tmp_path / f"{name}.ipynb", notebook([{"cell_type": "markdown", "source": ""},
                                                    {"cell_type": "code", "source": source}]))
    proc = trainlint(["check", "."], tmp_path)
    assert proc.returncode == 2
    assert "a.ipynb:cell 3:1:10: TL101" in proc.stdout
    assert "b.ipynb: error: not a notebook: invalid JSON" in proc.stderr
    assert "c.ipynb: error: not a notebook: no list of cells" in proc.stderr
    for name in "de":
        assert f"{name}.ipynb: error: not a notebook: the source of cell 2 is not text" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr
    # Metadata of another shape than nbformat's says nothing of the language: the cells are read.
    data = notebook()
    data["metadata"] = {"language_info": "python", "kernelspec": [1]}
    write(tmp_path / "d.ipynb", data)
    (tmp_path / "e.ipynb").unlink()
    proc = trainlint(["check", "d.ipynb"], tmp_path)
    assert "d.ipynb:cell 3:1:10: TL101" in proc.stdout and proc.returncode == 1, proc.stderr


def test_standard_input_names_a_notebook(tmp_path):
    raw = json.dumps(notebook(), indent=1, ensure_ascii=False) + "\n"
    proc = trainlint(["check", "--fix", "--stdin-filename", "nb/train.ipynb"], tmp_path, stdin=raw)
    fixed = json.loads(proc.stdout)
    assert fixed["cells"][3]["source"][2] == "    x = x.cuda(non_blocking=True)\n"
    assert "nb/train.ipynb:cell 4:9:19: TL201" in proc.stderr


def test_a_notebook_with_crlf_json_and_string_sources_keeps_both(tmp_path):
    data = notebook()
    data["cells"][3]["source"] = "".join(TRAIN_CELL)
    text = json.dumps(data, indent=1, ensure_ascii=False).replace("\n", "\r\n") + "\r\n"
    (tmp_path / "t.ipynb").write_bytes(text.encode("utf-8"))
    trainlint(["check", "--fix", "t.ipynb"], tmp_path)
    after = (tmp_path / "t.ipynb").read_bytes().decode("utf-8")
    assert after.count("\r\n") == after.count("\n")
    source = json.loads(after)["cells"][3]["source"]
    assert isinstance(source, str) and "x.cuda(non_blocking=True)" in source


def test_notebooks_can_be_left_out_by_an_exclude(tmp_path):
    write(tmp_path / "a.ipynb", notebook())
    (tmp_path / "b.py").write_text("x = 1\n")
    shown = trainlint(["check", "--show-files", "--config", 'extend-exclude = ["*.ipynb"]', "."], tmp_path)
    assert shown.stdout.split() == ["b.py"]


def test_formats_placed_by_the_files_lines_put_a_notebook_finding_on_its_first_line_with_no_fix(tmp_path):
    # A notebook's rows are its cells' code, not its JSON's: placed by them, a SARIF fix or an
    # rdjson suggestion would replace a line of the JSON (a broken notebook), and an annotation
    # would point at `  {`. The message names the cell and its line instead.
    write(tmp_path / "train.ipynb", notebook())
    args = ["check", "--select", "TL101", "--unsafe-fixes", "--output-format"]
    sarif = json.loads(trainlint([*args, "sarif", "train.ipynb"], tmp_path).stdout)
    [result] = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    assert "fixes" not in result and result["message"]["text"].startswith("cell 3, line 1: ")
    [item] = json.loads(trainlint([*args, "rdjson", "train.ipynb"], tmp_path).stdout)["diagnostics"]
    assert item["location"]["range"]["start"]["line"] == 1 and "suggestions" not in item
    github = trainlint([*args, "github", "train.ipynb"], tmp_path).stdout
    assert ",line=1,col=1," in github and "::TL101 cell 3, line 1: " in github


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_a_fix_keeps_the_notebooks_way_of_writing_non_ascii(tmp_path, ensure_ascii):
    # A notebook written with json.dumps' default escapes ("Caf\u00e9") came back with every
    # non-ASCII character written out, changing a markdown cell no fix touched; Jupyter's own style
    # (ensure_ascii=False, indent 1, final newline) must stay as it is too.
    data = notebook()
    data["cells"][0]["source"] = ["# Café → training\n", "é"]
    before = json.dumps(data, indent=1, ensure_ascii=ensure_ascii) + "\n"
    (tmp_path / "train.ipynb").write_text(before, encoding="utf-8")
    trainlint(["check", "--fix", "train.ipynb"], tmp_path)
    after = (tmp_path / "train.ipynb").read_text(encoding="utf-8")
    assert after != before and after.endswith("}\n")
    assert json.loads(after)["cells"][0] == data["cells"][0]
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert changed and all(line.startswith('    "') for line in changed), changed  # only fixed sources' rows
    assert ("Caf\\u00e9 \\u2192" in after) == ensure_ascii and ("Café →" in after) != ensure_ascii
    assert ("café ok" in after) != ensure_ascii  # the output's text too
    assert Notebook.parse(after).render(Notebook.parse(after).text) == after


@pytest.mark.parametrize("hands", ["Squares()", "TensorDataset(xs), collate_fn=stack"])
def test_workers_are_not_added_for_what_a_notebook_defines(tmp_path, hands):
    # A worker started by spawn or forkserver (Jupyter on macOS and Windows, Linux from Python
    # 3.14) unpickles the dataset and collate_fn by importing `__main__`, which for a kernel is no
    # file: the fix crashed the notebook's training with "Can't get attribute 'Squares'". A class
    # the notebook imports is fine, and still fixed.
    defs = ("import torch\nfrom torch.utils.data import DataLoader, Dataset, TensorDataset\n\n"
            "class Squares(Dataset):\n    def __len__(self):\n        return 64\n"
            "    def __getitem__(self, i):\n        return torch.tensor([float(i)])\n\n"
            "def stack(items):\n    return torch.stack([t for (t,) in items])\n")
    train = (f"loader = DataLoader({hands}, batch_size=8)\n"
             "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n")
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}
             for s in (defs, train)]
    write(tmp_path / "train.ipynb", notebook(cells))
    proc = trainlint(["check", "--select", "TL101", "--unsafe-fixes", "--output-format", "json", "train.ipynb"],
                     tmp_path)
    [finding] = json.loads(proc.stdout)
    assert finding["fix"] is None
    name = "Squares" if "Squares" in hands else "stack"
    assert f"`{name}` is defined in the notebook" in finding["message"]
    assert "move it into a `.py` module the notebook imports" in finding["message"]
    imported = [{**cells[0], "source": "import torch\nfrom torch.utils.data import DataLoader\n"
                 "from shapes import Squares\n"}, cells[1]]
    write(tmp_path / "train.ipynb", notebook(imported))
    proc = trainlint(["check", "--select", "TL101", "--unsafe-fixes", "--output-format", "json", "train.ipynb"],
                     tmp_path)
    if "Squares" in hands:
        [finding] = json.loads(proc.stdout)
        assert finding["fix"] is not None, finding


def test_a_fix_replaces_only_the_fixed_sources_and_keeps_every_other_byte(tmp_path):
    # The whole JSON was written again with json.dumps: a minified notebook gained a space after
    # every separator, and numbers came back as Python spells them (`0.000052`, as JavaScript
    # writes it, became `5.2e-05`) in metadata no fix touched.
    data = notebook()
    data["metadata"]["papermill"] = {"duration": 0.000052, "start": 1e5}
    minified = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("5.2e-05", "0.000052")
    indented = json.dumps(data, indent=1, ensure_ascii=False).replace("5.2e-05", "0.000052") + "\n"
    for name, before in (("min.ipynb", minified), ("ind.ipynb", indented)):
        (tmp_path / name).write_text(before, encoding="utf-8")
        trainlint(["check", "--fix", "--select", "TL102,TL108", name], tmp_path)
        after = (tmp_path / name).read_text(encoding="utf-8")
        expected = before.replace('shuffle=True)\\n"', 'shuffle=True, pin_memory=True)\\n"').replace(
            '"    x = x.cuda()\\n"', '"    x = x.cuda(non_blocking=True)\\n"')
        assert after == expected != before


def test_lines_a_fix_kept_keep_their_escapes_and_an_empty_cell_takes_new_lines_in_the_notebooks_layout(tmp_path):
    # Some tools escape one character and not another (`\u00e9` beside `→`); a line the fix did
    # not change is written back as it was read. An empty first cell that receives text put before
    # the first cell (a fix's new import) is laid out one line per item, as the other lists are.
    data = notebook()
    data["cells"].insert(1, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                             "source": []})
    data["cells"][4]["source"] = ["# café → gpu\n", *TRAIN_CELL]
    before = json.dumps(data, indent=1, ensure_ascii=False).replace("café", "caf\\u00e9") + "\n"
    (tmp_path / "t.ipynb").write_text(before, encoding="utf-8")
    trainlint(["check", "--fix", "--select", "TL102,TL108", "t.ipynb"], tmp_path)
    after = (tmp_path / "t.ipynb").read_text(encoding="utf-8")
    assert '    "# caf\\u00e9 → gpu\\n",\n' in after and '"    x = x.cuda(non_blocking=True)\\n"' in after
    nb = Notebook.parse(before)
    rendered = nb.render("import os\n" + nb.text)
    assert rendered == before.replace('   "source": []\n', '   "source": [\n    "import os"\n   ]\n'), rendered
    minified = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    nb = Notebook.parse(minified)
    assert nb.render("import os\n" + nb.text) == minified.replace('"source":[]', '"source":["import os"]')


_LINE = st.builds(lambda name, value: f"{name} = {value!r}\n", st.sampled_from(["x", "y", "lr"]),
                  st.text(max_size=8) | st.floats(allow_nan=False))
_SOURCE = st.lists(_LINE, max_size=4).map("".join)
_STYLE = st.fixed_dictionaries({
    "indent": st.sampled_from([None, 0, 1, 2, "\t"]), "ensure_ascii": st.booleans(), "sort_keys": st.booleans(),
    "separators": st.sampled_from([None, (",", ":"), (", ", ": ")])})


@settings(max_examples=int(os.environ.get("TRAINLINT_PROPERTY_EXAMPLES", "40")), deadline=None)
@given(sources=st.lists(_SOURCE | _SOURCE.map(lambda s: s.rstrip("\n")), min_size=1, max_size=4),
       as_list=st.lists(st.booleans(), min_size=4, max_size=4), style=_STYLE, crlf=st.booleans(),
       new=_SOURCE.filter(bool), which=st.integers(0, 3), extra=st.floats(allow_nan=False) | st.text(max_size=6))
def test_rendering_a_changed_cell_changes_only_its_source_in_any_json_style(sources, as_list, style, crlf, new,
                                                                        which, extra):
    cells = [{"cell_type": "code", "metadata": {"extra": extra}, "outputs": [{"text": [extra]}],
              "source": split_lines(s) if listed else s} for s, listed in zip(sources, as_list)]
    raw = json.dumps({"cells": cells, "metadata": {"v": extra}, "nbformat": 4}, **style)
    raw = raw.replace("\n", "\r\n") if crlf else raw
    nb = Notebook.parse(raw)
    assert nb.render(nb.text) == raw
    which %= len(cells)
    chunks = nb.text.split("# trainlint: cell ")[1:]
    chunks[which] = f"{which + 1}\n{new}"
    rendered = nb.render("".join(f"# trainlint: cell {chunk}" for chunk in chunks))
    expected = new if sources[which].endswith("\n") else new[:-1]  # a cell keeps its last line open
    got = json.loads(rendered)
    assert _cell_text(got["cells"][which]) == expected
    assert got["cells"][:which] + got["cells"][which + 1:] == cells[:which] + cells[which + 1:]
    assert {k: v for k, v in got["cells"][which].items() if k != "source"} == {
        k: v for k, v in cells[which].items() if k != "source"}
    start, end = source_spans(raw)[which]
    assert json.loads(raw[start:end]) == cells[which]["source"]
    assert rendered[:start] == raw[:start] and rendered[len(rendered) - (len(raw) - end):] == raw[end:]


def test_source_spans_read_keys_given_twice_as_json_does():
    # json.loads keeps the last of a key given twice: the spans must point at the same values.
    raw = ('{"cells": [{"source": "old"}], "metadata": {},\n "cells" : [ {"source": "a", "source": ["b\\n", "c"]},'
           ' 7, {"cell_type": "code"} , {"outputs": [{"data": {"image/png": "AAAA"}}], "source": "d"} ]}')
    cells = json.loads(raw)["cells"]
    spans = source_spans(raw)
    assert len(spans) == len(cells) == 4
    assert [json.loads(raw[s:e]) if s is not None else None for s, e in (span or (None, None) for span in spans)] \
        == [cells[0]["source"], None, None, cells[3]["source"]]


def _cell_text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=6)
_CELL = st.fixed_dictionaries({}, optional={
    "cell_type": st.sampled_from(["code", "markdown", "raw", 3]), "metadata": _JSON, "outputs": _JSON,
    "source": _JSON | st.lists(st.sampled_from(["x = 1\n", "%time x\n", "!ls\n", "for a in b:\n", "    pass\n",
                                                "loader = DataLoader(ds)\n"]))})


@settings(max_examples=int(os.environ.get("TRAINLINT_PROPERTY_EXAMPLES", "100")), deadline=None)
@given(data=st.fixed_dictionaries({"cells": st.lists(_CELL | _JSON, max_size=4)},
                                  optional={"metadata": _JSON | st.fixed_dictionaries(
                                      {"language_info": _JSON, "kernelspec": _JSON}), "nbformat": _JSON}))
def test_any_json_is_read_as_a_notebook_or_refused_with_a_notebook_error(data):
    # Cells and metadata of every JSON shape: a notebook is read (and its unchanged text renders
    # the same bytes), or refused with a NotebookError; a `null` source was read as `None`, a
    # number in a source list and a string `language_info` were internal errors.
    raw = json.dumps(data)
    try:
        nb = Notebook.parse(raw)
    except NotebookError as exc:
        assert str(exc).startswith("not a notebook: ")
        return
    assert nb.render(nb.text) == raw
