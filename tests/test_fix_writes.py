"""Fixes are written atomically, keep encoding, BOM, line endings and mode, never overwrite a file
that changed on disk, and are never written when the result would not parse."""

import codecs
import os
import stat

import pytest

from trainlint.config import Settings
from trainlint.engine import ActiveRule
from trainlint.fixer import FixError, fix_text
from trainlint.rule import Rule
from trainlint.runner import Mode, check_file
from trainlint.source import SourceError, read_source
from trainlint.writer import write_fixed

CODE = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
FIXED = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, prefetch_factor=4)\n"
SETTINGS = Settings(select=("TL104",))


def fix(path):
    return check_file(str(path), SETTINGS, Mode(fix=True))


def test_crlf_and_mode_kept(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(CODE.replace("\n", "\r\n").encode())
    os.chmod(path, 0o751)
    result = fix(path)
    assert result.error is None and result.fixed == 1
    assert path.read_bytes() == FIXED.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751


def test_mixed_line_endings_kept(tmp_path):
    path = tmp_path / "a.py"
    raw = "from torch.utils.data import DataLoader\r\nx = 1\nloader = DataLoader(ds, num_workers=4)\r\n"
    path.write_bytes(raw.encode())
    fix(path)
    assert path.read_bytes() == raw.replace("num_workers=4)", "num_workers=4, prefetch_factor=4)").encode()


def test_bom_kept(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(codecs.BOM_UTF8 + CODE.encode())
    fix(path)
    assert path.read_bytes() == codecs.BOM_UTF8 + FIXED.encode()


def test_declared_encoding_kept(tmp_path):
    path = tmp_path / "a.py"
    text = "# -*- coding: latin-1 -*-\n# café\n" + CODE
    path.write_bytes(text.encode("latin-1"))
    fix(path)
    assert path.read_bytes() == ("# -*- coding: latin-1 -*-\n# café\n" + FIXED).encode("latin-1")


def test_changed_on_disk_is_not_overwritten(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(CODE)
    source = read_source(str(path))
    path.write_text(CODE + "# edited meanwhile\n")
    with pytest.raises(SourceError, match="changed on disk"):
        write_fixed(source, FIXED)
    assert path.read_text() == CODE + "# edited meanwhile\n"


def test_no_temporary_files_left(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(CODE)
    fix(path)
    assert sorted(os.listdir(tmp_path)) == ["a.py"]


class BreaksCode(Rule):
    """A deliberately broken rule: its 'fix' produces invalid Python."""

    code = "TL999"
    name = "breaks-code"
    summary = "test only"
    docs = ""
    source = "§0"

    def visit_Call(self, node):
        from trainlint.diagnostics import Applicability

        self.report(node, "broken", self.fix(Applicability.SAFE, "break it", (node, "def (")))


def test_fix_that_does_not_parse_is_not_written(tmp_path):
    outcome = fix_text(CODE, "a.py", [ActiveRule(BreaksCode, {})])
    assert outcome.text == CODE and outcome.applied == []
    assert [(d.code, why.split(" (")[0]) for d, why in outcome.refused] == [("TL999", "invalid code")]
    # Left as a finding without a fix: not offered as fixable where it cannot be written.
    assert [(d.code, d.fix) for d in outcome.remaining] == [("TL999", None)]


def test_a_broken_fix_keeps_the_others(tmp_path, monkeypatch):
    # One rule's fix that breaks the code kept every fix of the file from being written (a TL201
    # guard with no body in a `case:` stopped the safe TL102 and TL104 fixes beside it); now it
    # alone is left out, said on standard error, and the others are written.
    path = tmp_path / "a.py"
    path.write_text(CODE)
    tl104 = SETTINGS.active_rules(str(path))
    monkeypatch.setattr(Settings, "active_rules", lambda self, path=None: [ActiveRule(BreaksCode, {}), *tl104])
    result = fix(path)
    assert result.error is None and result.fixed == 1
    assert path.read_text() == FIXED
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith(f"{path}:2:10: warning: TL999's fix was not applied: it would "
                                         "produce invalid code")


class DropsPass(Rule):
    """Test only: each `pass` is removed; one of two in a block is fine, both leave it empty."""

    code, name, summary, docs, source = "TL998", "drops-pass", "test only", "", "§0"

    def visit_Pass(self, node):
        from trainlint.diagnostics import Applicability

        self.report(node, "drop", self.fix(Applicability.SAFE, "drop", (node, "")))


def test_fixes_that_break_the_code_only_together_are_not_written():
    # Each fix alone leaves valid code (one `pass` of two removed), so none is left out as the
    # culprit; together they empty the block: the file is not fixed, as before.
    rules = [ActiveRule(DropsPass, {})]
    assert fix_text("if c:\n    pass\n    x = 1\n", "a.py", rules).refused == []
    with pytest.raises(FixError, match="the fixes for TL998 would produce invalid code"):
        fix_text("if c:\n    pass\n    pass\n", "a.py", rules)


def test_unfixable_file_is_reported_and_untouched(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(CODE)
    monkeypatch.setattr(Settings, "active_rules", lambda self, path=None: [ActiveRule(BreaksCode, {})])
    result = fix(path)
    assert result.error is None and result.fixed == 0 and result.warnings
    assert path.read_text() == CODE


def test_binary_and_undecodable_files(tmp_path):
    (tmp_path / "bin.py").write_bytes(b"\x00\x01\x02DataLoader")
    (tmp_path / "latin.py").write_bytes("x = 'café'\n".encode("latin-1"))
    assert "binary" in check_file(str(tmp_path / "bin.py"), SETTINGS, Mode()).error.reason
    assert "cannot decode as utf-8" in check_file(str(tmp_path / "latin.py"), SETTINGS, Mode()).error.reason


def test_a_fix_this_python_cannot_parse_is_not_written():
    # libcst reads every Python's syntax, so a fix could write what only a newer interpreter
    # parses (same-quote strings inside an f-string, from 3.12 on); the fixer asks the running
    # interpreter too.
    import sys

    from trainlint.fixer import _compiles

    assert _compiles("x = f'{1}'\n")
    assert not _compiles("def f(:\n")
    if sys.version_info < (3, 12):
        assert not _compiles('x = f"{"a"}"\n')


def test_a_hard_linked_file_is_fixed_in_place_and_a_read_only_one_is_not_fixed(tmp_path):
    # A rename would give `a.py` a new file and leave its other link with the old code; a
    # read-only file in a writable folder would be replaced all the same.
    path = tmp_path / "a.py"
    path.write_text(CODE)
    os.link(path, tmp_path / "b.py")
    assert fix(path).fixed == 1
    assert (tmp_path / "b.py").read_text() == FIXED and os.stat(path).st_ino == os.stat(tmp_path / "b.py").st_ino
    locked = tmp_path / "locked.py"
    locked.write_text(CODE)
    os.chmod(locked, 0o444)
    result = fix(locked)
    assert "read-only" in result.error.reason and locked.read_text() == CODE
