"""--baseline and --add-noqa on hand-built diagnostics (end-to-end versions run via the API)."""

from __future__ import annotations

import json
import os
import stat

import pytest
from _integration_support import diag, result_of

from trainlint.baseline import BaselineError, apply_baseline, filter_new, read_baseline, write_baseline
from trainlint.noqa import add_noqa

SRC = "import torch\nloader = DataLoader(ds)\nother = DataLoader(ds)\n"


def _findings(source: str, path: str, needle: str = "DataLoader(ds)", code: str = "TL101"):
    out, pos = [], 0
    while (i := source.find(needle, pos)) >= 0:
        out.append(diag(source, path, code, i, i + len(needle)))
        pos = i + 1
    return out


def test_baseline_survives_moved_lines_and_flags_new_findings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "trainlint-baseline.json"
    before = result_of({"train.py": (SRC, _findings(SRC, "train.py"))})
    assert write_baseline(before, base) == 2
    doc = json.loads(base.read_text())
    assert doc["format"] == "trainlint-baseline" and [f["path"] for f in doc["findings"]] == ["train.py", "train.py"]

    # Lines move down and get re-indented; one more identical call appears.
    moved = "import torch\n\n\n# comment\nif True:\n    loader  =  DataLoader(ds)\nother = DataLoader(ds)\nother = DataLoader(ds)\n"
    after = result_of({"train.py": (moved, _findings(moved, "train.py"))})
    new = filter_new(after, base).diagnostics
    assert len(new) == 1 and new[0].start.row == 8

    # A changed flagged line is a new finding.
    edited = SRC.replace("loader = DataLoader(ds)", "loader = DataLoader(ds)  # now commented")
    changed = filter_new(result_of({"train.py": (edited, _findings(edited, "train.py"))}), base)
    assert [d.start.row for d in changed.diagnostics] == [2]


def test_baseline_paths_are_relative_to_the_baseline_file(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "b.json"
    write_baseline(result_of({"pkg/t.py": (SRC, _findings(SRC, "pkg/t.py"))}), base)
    monkeypatch.chdir(tmp_path / "pkg")  # same file, reached through a different relative path
    assert filter_new(result_of({"t.py": (SRC, _findings(SRC, "t.py"))}), base).diagnostics == []


def test_apply_baseline_first_run_writes_then_filters(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = result_of({"t.py": (SRC, _findings(SRC, "t.py"))})
    shown, written = apply_baseline(res, "bl.json")
    assert written == 2 and shown.diagnostics == []
    shown, written = apply_baseline(res, "bl.json")
    assert written is None and shown.diagnostics == []


@pytest.mark.parametrize(
    "content, reason",
    [
        ("{not json", "invalid JSON"),
        ('{"findings": []}', "not a trainlint baseline"),
        ('{"format": "trainlint-baseline", "version": 9, "findings": []}', "unsupported baseline version 9"),
        ('{"format": "trainlint-baseline", "version": 1, "findings": [1]}', "must be a list of objects"),
    ],
)
def test_bad_baseline_files_name_the_file_and_reason(tmp_path, content, reason):
    f = tmp_path / "bl.json"
    f.write_text(content)
    with pytest.raises(BaselineError, match=reason) as exc:
        read_baseline(f)
    assert str(f) in str(exc.value)
    with pytest.raises(BaselineError, match="does not exist"):
        read_baseline(tmp_path / "missing.json")


# -- add-noqa ----------------------------------------------------------------------------------


def _write(tmp_path, name, text, newline=""):
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8"))
    return str(p)


def test_add_noqa_inserts_and_merges(tmp_path):
    src = (
        "import torch\n"
        "a = DataLoader(ds)\n"
        "b = DataLoader(ds)  # noqa: E501\n"
        "c = DataLoader(ds)  # noqa\n"
        "d = DataLoader(ds)  # type: ignore\n"
        "e = DataLoader(ds)   \n"
    )
    path = _write(tmp_path, "t.py", src)
    findings = _findings(src, path)
    i = src.index("a = ")
    findings.append(diag(src, path, "TL105", i + 4, i + 18))  # second code on line 2
    n = add_noqa(result_of({path: (src, findings)}))
    assert n == 5  # two on line 2, one each on 3, 5 and 6; the blanket noqa on 4 already covers it
    assert open(path).read() == (
        "import torch\n"
        "a = DataLoader(ds)  # noqa: TL101, TL105\n"
        "b = DataLoader(ds)  # noqa: E501, TL101\n"
        "c = DataLoader(ds)  # noqa\n"
        "d = DataLoader(ds)  # type: ignore  # noqa: TL101\n"
        "e = DataLoader(ds)  # noqa: TL101\n"
    )
    # Running again adds nothing.
    again = open(path).read()
    assert add_noqa(result_of({path: (again, _findings(again, path))})) == 0


def test_add_noqa_adds_beside_a_code_written_in_lower_case(tmp_path):
    # The engine compares codes as written, so `tl101` suppresses nothing: TL101 is added, and the
    # comment's other codes keep their case.
    from trainlint.api import lint_source

    head = "from torch.utils.data import DataLoader\n"
    src = head + "a = DataLoader(ds)  # noqa: tl101\nb = DataLoader(ds)  # NOQA: x100\n"
    path = _write(tmp_path, "t.py", src)
    assert [d.start.row for d in lint_source(src, select=["TL101"])] == [2, 3]  # neither is suppressed
    assert add_noqa(result_of({path: (src, _findings(src, path))})) == 2
    fixed = open(path).read()
    assert fixed == head + "a = DataLoader(ds)  # noqa: tl101, TL101\nb = DataLoader(ds)  # noqa: x100, TL101\n"
    assert lint_source(fixed, select=["TL101"]) == []


def test_add_noqa_keeps_bom_crlf_and_mode(tmp_path):
    src = "x = 1\r\nloader = DataLoader(ds)\r\n"
    p = tmp_path / "w.py"
    p.write_bytes(b"\xef\xbb\xbf" + src.encode())
    os.chmod(p, 0o750)
    assert add_noqa(result_of({str(p): (src, _findings(src, str(p)))})) == 1
    assert p.read_bytes() == b"\xef\xbb\xbfx = 1\r\nloader = DataLoader(ds)  # noqa: TL101\r\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o750


def test_add_noqa_puts_the_comment_where_the_string_or_continuation_ends(tmp_path):
    # A finding on a line that cannot take a comment is suppressed where its multi-line string
    # ends, or where its backslash continuation ends (a chain: through a string), as the engine
    # reads it (Ruff's rule).
    from trainlint.api import lint_source

    src = ('from torch.utils.data import DataLoader\n'
           'x = f(DataLoader(ds), """doc\nmore""")\ny = DataLoader(ds) + \\\n    \\\n    1\n'
           'w = DataLoader(ds) + \\\n    g("""a\nb""")\nz = DataLoader(ds)\n')
    path = _write(tmp_path, "m.py", src)
    errors = []
    assert [d.start.row for d in lint_source(src, select=["TL101"])] == [2, 4, 7, 10]
    assert add_noqa(result_of({path: (src, _findings(src, path))}), errors) == 4
    fixed = (src.replace('more""")', 'more""")  # noqa: TL101').replace("    1\n", "    1  # noqa: TL101\n")
             .replace('"""a\nb""")', '"""a\nb""")  # noqa: TL101')
             .replace("z = DataLoader(ds)", "z = DataLoader(ds)  # noqa: TL101"))
    assert open(path).read() == fixed
    assert errors == []
    assert lint_source(fixed, select=["TL101"]) == []


def test_add_noqa_never_writes_a_comment_after_a_backslash(tmp_path, monkeypatch):
    # Should the rows a comment moves to be unknown (the tokenizer gave up on the file), a finding
    # on a continued line is reported: a comment after the backslash would break the code.
    import trainlint.noqa as noqa

    monkeypatch.setattr(noqa, "comment_rows", lambda text: {})
    src = "y = DataLoader(ds) + \\\n    1\nz = DataLoader(ds)\n"
    path = _write(tmp_path, "b.py", src)
    errors = []
    assert add_noqa(result_of({path: (src, _findings(src, path))}), errors) == 1
    assert open(path).read() == src.replace("z = DataLoader(ds)", "z = DataLoader(ds)  # noqa: TL101")
    assert [e.reason for e in errors] == ["cannot add noqa on line 1 (TL101): no line of its statement can take a comment"]
    assert noqa.suppressed_line(src, 1, "TL101") is None


def test_a_backslash_ending_a_comment_or_inside_a_string_continues_nothing():
    # Only row 2's own comment could suppress its finding; rows 4-5 are one string, whose
    # comment (on row 5) covers row 4.
    from trainlint.api import lint_source

    src = ("from torch.utils.data import DataLoader\na = DataLoader(ds)  # see \\\nb = 1  # noqa: TL101\n"
           "c = DataLoader(ds, x='''\\\n''')  # noqa: TL101\n")
    assert [d.start.row for d in lint_source(src, select=["TL101"])] == [2]


def test_add_noqa_refuses_a_file_changed_since_the_check(tmp_path):
    src = "loader = DataLoader(ds)\n"
    path = _write(tmp_path, "c.py", "loader = DataLoader(ds)\n# edited meanwhile\n")
    errors = []
    assert add_noqa(result_of({path: (src, _findings(src, path))}), errors) == 0
    assert errors and errors[0].path == path and "changed since" in errors[0].reason
    assert open(path).read().endswith("# edited meanwhile\n")


def test_add_noqa_keeps_a_declared_encoding(tmp_path):
    src = "# -*- coding: latin-1 -*-\nname = 'café'\nloader = DataLoader(ds)\n"
    p = tmp_path / "l.py"
    p.write_bytes(src.encode("latin-1"))
    assert add_noqa(result_of({str(p): (src, _findings(src, str(p)))})) == 1
    assert p.read_bytes() == src.replace("(ds)\n", "(ds)  # noqa: TL101\n").encode("latin-1")
