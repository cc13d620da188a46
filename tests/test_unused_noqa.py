"""TL001 (unused-noqa) beyond its rule cases: where it points, what it leaves alone, how its fix
edits comments and lines, and the command line around it (--fix, --add-noqa, the cache,
per-file-ignores, notebooks). Real files, the real CLI."""

from __future__ import annotations

import json
import os

from _cli import run_cli
from trainlint.api import Settings, fix_source, lint_source

LOADER = "from torch.utils.data import DataLoader\n"
WORKERS = "loader = DataLoader(ds, num_workers=4, prefetch_factor=4, pin_memory=True)"


def found(text, select=("TL001", "TL1"), **settings):
    return [(d.code, d.start.row, d.start.column, d.message)
            for d in lint_source(text, settings=Settings(select=tuple(select), **settings))]


def fixed(text, select=("TL001", "TL1")):
    return fix_source(text, settings=Settings(select=tuple(select)), unsafe_fixes=False)




def test_a_suppression_on_the_wrong_line_of_a_finding_is_reported_beside_the_finding():
    text = LOADER + "loader = DataLoader(\n    ds,  # noqa: TL101\n    num_workers=0,\n)\n"
    assert found(text, ("TL001", "TL101")) == [
        ("TL101", 2, 10, found(text, ("TL101",))[0][3]),
        ("TL001", 3, 10, "Unused suppression: no TL101 finding starts on this line"),
    ]


def test_only_codes_of_rules_that_ran_are_judged():
    text = LOADER + WORKERS + "  # noqa: TL101, TL403, E501, X1\n"
    # TL403 is off by default and did not run; E501 and X1 belong to other tools.
    assert [f[3] for f in found(text, ("TL001", "TL1"))] == [
        "Unused suppression: no TL101 finding starts on this line"]
    # A rule ignored for the file did not run either.
    assert found(text, ("TL001", "TL1"), ignore=("TL101",)) == []
    # A prefix is judged when every rule it names ran.
    assert [f[3] for f in found(LOADER + WORKERS + "  # noqa: TL1\n")] == [
        "Unused suppression: no TL1 finding starts on this line"]
    assert found(LOADER + WORKERS + "  # noqa: TL4\n", ("TL001", "TL1", "TL401", "TL402")) == []
    # A blanket file-level suppression leaves nothing to judge.
    assert found("# trainlint: noqa\n" + LOADER + WORKERS + "  # noqa: TL101\n") == []


def test_several_unused_codes_are_one_finding_and_one_edit():
    text = LOADER + WORKERS + "  # noqa: TL101, E501, TL104\n"
    assert [f[3] for f in found(text)] == ["Unused suppression: no TL101 or TL104 finding starts on this line"]
    assert fixed(text) == LOADER + WORKERS + "  # noqa: E501\n"
    diagnostic = lint_source(text, settings=Settings(select=("TL001", "TL1")))[0]
    assert diagnostic.fix.message == "Remove TL101 and TL104 from the suppression"


def test_the_fix_removes_a_comment_alone_on_its_line_with_its_line():
    text = LOADER + "# noqa: TL101\n" + WORKERS + "\n"
    assert fixed(text) == LOADER + WORKERS + "\n"
    crlf = text.replace("\n", "\r\n")
    assert fixed(crlf) == (LOADER + WORKERS + "\n").replace("\n", "\r\n")
    # The last line of a file without a line ending.
    assert fixed(LOADER + WORKERS + "\n    # noqa: TL101") == LOADER + WORKERS + "\n"


def test_two_unused_directives_on_one_line_both_go():
    text = LOADER + WORKERS + "  # noqa: TL101  # trainlint: ignore[TL102]\n"
    assert len(found(text)) == 2
    assert fixed(text) == LOADER + WORKERS + "\n"


def test_a_used_code_keeps_the_comment_and_an_unused_one_leaves_it():
    text = LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL101, TL104\n"
    assert fixed(text) == LOADER + "loader = DataLoader(ds, num_workers=4)  # noqa: TL104\n"


def test_ignore_noqa_judges_nothing():
    text = LOADER + WORKERS + "  # noqa: TL101\n"
    assert found(text, ignore_noqa=True) == []


def test_cli_fix_writes_the_comment_removal_and_keeps_crlf(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes((LOADER + WORKERS + "  # noqa: TL101\n").replace("\n", "\r\n").encode())
    result = run_cli(["check", "--extend-select", "TL001", "--no-cache", "--fix", "train.py"], tmp_path)
    assert result.exit_code == 0, result.output
    assert "Found 1 error (1 fixed, 0 remaining)." in result.output
    assert path.read_bytes() == (LOADER + WORKERS + "\n").replace("\n", "\r\n").encode()


def test_cli_reports_the_finding_at_the_comment_and_the_cache_keeps_it(tmp_path):
    (tmp_path / "train.py").write_text(LOADER + WORKERS + "  # noqa: TL101\n")
    args = ["check", "--extend-select", "TL001", "--output-format", "concise", "train.py"]
    first = run_cli(args, tmp_path)
    second = run_cli(args, tmp_path)  # answered from .trainlint_cache
    assert first.exit_code == second.exit_code == 1
    assert "train.py:2:77: TL001 [*] Unused suppression: no TL101 finding starts on this line" in first.output
    assert first.output == second.output
    # Without the rule selected (the default), nothing is said about suppressions.
    assert run_cli(["check", "train.py"], tmp_path).exit_code == 0


def test_add_noqa_does_not_suppress_unused_suppressions(tmp_path):
    source = LOADER + WORKERS + "  # noqa: TL101\nother = DataLoader(ds)\n"
    (tmp_path / "train.py").write_text(source)
    result = run_cli(["check", "--select", "TL001,TL101", "--no-cache", "--add-noqa", "train.py"], tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "train.py").read_text() == source.replace(
        "other = DataLoader(ds)\n", "other = DataLoader(ds)  # noqa: TL101\n")


def test_per_file_ignores_leave_that_files_suppressions_alone(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.trainlint]\nextend-select = ["TL001"]\nper-file-ignores = { "legacy/*" = ["TL101"] }\n')
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(LOADER + WORKERS + "  # noqa: TL101\n")
    (tmp_path / "new.py").write_text(LOADER + WORKERS + "  # noqa: TL101\n")
    result = run_cli(["check", "--no-cache", "--output-format", "json", "."], tmp_path)
    paths = [os.path.relpath(d["filename"], tmp_path) for d in json.loads(result.output)]
    assert paths == ["new.py"]


def test_a_notebook_cells_unused_suppression_is_placed_and_removed(tmp_path):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": [LOADER]},
             {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": ["%matplotlib inline\n", WORKERS + "  # noqa: TL101\n", "x = 1"]}]
    data = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps(data, indent=1) + "\n")
    result = run_cli(["check", "--extend-select", "TL001", "--no-cache", "train.ipynb"], tmp_path)
    assert "train.ipynb:cell 2:2:77: TL001" in result.output, result.output
    result = run_cli(["check", "--extend-select", "TL001", "--no-cache", "--fix", "train.ipynb"], tmp_path)
    assert result.exit_code == 0, result.output
    source = json.loads(path.read_text())["cells"][1]["source"]
    assert source == ["%matplotlib inline\n", WORKERS + "\n", "x = 1"]
