"""Bad input through the real CLI: each case gets a clear `path: error: reason`, the right exit
code (2 when a file could not be checked), no traceback, and nothing lost on disk.

Most cases run `python -m trainlint` in a subprocess. Races (a file deleted or edited while the
run is under way) are made deterministic with click's CliRunner and a hook at the exact step.
"""

from __future__ import annotations

import codecs
import os
import stat
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from trainlint import runner as runner_module
from trainlint.cli import cli
from trainlint.source import MAX_BYTES

# A file with one safe fix (TL104 adds prefetch_factor=4) and nothing else to fix safely.
FIXABLE = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n"
FIXED = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, prefetch_factor=4)\n"
SELECT = ["--select", "TL104", "--no-cache"]


def run_cli(*args, cwd=None, timeout=120):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "trainlint", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def assert_clean_error(proc, path, reason_part):
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.startswith(f"{path}: error: ")]
    assert lines, proc.stderr
    assert any(reason_part in l for l in lines), lines


def write(path, data: bytes | str, mode=None):
    with open(path, "wb") as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        os.chmod(path, mode)
    return str(path)


# -- files that cannot be checked -------------------------------------------------------------------

def test_syntax_error(tmp_path):
    path = write(tmp_path / "bad.py", "from torch.utils.data import DataLoader\nloader = DataLoader(ds,\n")
    proc = run_cli(path, *SELECT)
    assert_clean_error(proc, path, "syntax error at line")


def test_syntax_error_is_said_as_python_says_it(tmp_path):
    # libcst alone put this one row late, with a list of expected tokens; CPython names the mistake.
    path = write(tmp_path / "py2.py", "from torch.utils.data import DataLoader\nprint 'hi'\nloader = DataLoader(ds)\n")
    proc = run_cli(path, *SELECT)
    assert_clean_error(proc, path, "syntax error at line 2, column 1: Missing parentheses in call to 'print'")
    unclosed = write(tmp_path / "unclosed.py", "loader = DataLoader(ds,\n")
    assert_clean_error(run_cli(unclosed, *SELECT), unclosed, "syntax error at line 1, column 20: '(' was never closed")


def test_syntax_error_does_not_stop_the_run(tmp_path):
    bad = write(tmp_path / "a_bad.py", "from torch.utils.data import DataLoader\ndef f(:\n")
    good = write(tmp_path / "b_good.py", FIXABLE)
    proc = run_cli(bad, good, *SELECT)
    assert_clean_error(proc, bad, "syntax error")
    assert f"{good}:2:10: TL104" in proc.stdout


# Syntax newer than the interpreter running trainlint (3.12's `type` and generics, 3.14's t-strings
# and unparenthesised `except A, B`): valid code that libcst reads, though the stdlib parser of an
# older Python rejects it. Checked with and without a rule that needs the tree.
NEWER_SYNTAX = (
    "type Batch = list[int]\n"
    "def first[T](items: list[T]) -> T:\n"
    "    return items[0]\n"
    "greeting = t\"hi {first([1])}\"\n"
    "try:\n"
    "    pass\n"
    "except ValueError, TypeError:\n"
    "    pass\n"
)


def test_syntax_newer_than_the_interpreter_is_read(tmp_path):
    plain = write(tmp_path / "plain.py", NEWER_SYNTAX)
    proc = run_cli(plain, *SELECT)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout
    linted = write(tmp_path / "linted.py", NEWER_SYNTAX + FIXABLE)
    proc = run_cli(linted, *SELECT)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    assert f"{linted}:10:10: TL104" in proc.stdout


def test_invalid_utf8(tmp_path):
    path = write(tmp_path / "latin.py", b"# caf\xe9\n" + FIXABLE.encode())
    proc = run_cli(path, *SELECT)
    assert_clean_error(proc, path, "cannot decode as utf-8: invalid byte 0xe9 at offset 5")


def test_unknown_declared_encoding(tmp_path):
    path = write(tmp_path / "enc.py", b"# -*- coding: klingon -*-\n" + FIXABLE.encode())
    proc = run_cli(path, *SELECT)
    assert_clean_error(proc, path, "encoding")


def test_binary_file(tmp_path):
    path = write(tmp_path / "blob.py", b"\x7fELF\x02\x01\x01\x00\x00\x00DataLoader" + bytes(range(256)))
    proc = run_cli(path, *SELECT)
    assert_clean_error(proc, path, "binary file")


def test_fifty_megabyte_file_is_refused_quickly(tmp_path):
    path = str(tmp_path / "huge.py")
    line = b"x = DataLoader(ds, num_workers=4)  # padding padding padding padding padding\n"
    with open(path, "wb") as fh:
        fh.write(line * (50 * 1024 * 1024 // len(line) + 1))
    assert os.path.getsize(path) >= 50 * 1024 * 1024 > MAX_BYTES
    started = time.monotonic()
    proc = run_cli(path, *SELECT, "--fix")
    assert time.monotonic() - started < 30
    assert_clean_error(proc, path, "file too large")
    assert os.path.getsize(path) >= 50 * 1024 * 1024  # untouched


def test_symlink_loop_file(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    os.symlink(b, a)
    os.symlink(a, b)
    proc = run_cli(str(a), *SELECT)
    assert_clean_error(proc, str(a), "symbolic links")


def test_symlink_loop_directory_is_walked_once(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    write(pkg / "train.py", FIXABLE)
    os.symlink(pkg, pkg / "again")  # pkg/again/again/... would never end
    proc = run_cli(str(pkg), *SELECT, timeout=60)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("TL104") == 1, proc.stdout


def test_dangling_symlink(tmp_path):
    link = tmp_path / "gone.py"
    os.symlink(tmp_path / "missing.py", link)
    proc = run_cli(str(link), *SELECT)
    assert_clean_error(proc, str(link), f"broken symbolic link (to {tmp_path / 'missing.py'})")


@pytest.mark.parametrize("git", [False, True])
def test_dangling_symlink_met_in_a_folder_walk_is_skipped(tmp_path, git):
    """An Emacs lock file (`.#a.py` -> `me@host.4242:1700000000`) found while walking a folder made
    the run exit 2 ("broken symbolic link"); it is skipped with a warning, in a git work tree too."""
    if git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / "a.py", FIXABLE)
    os.symlink("me@host.4242:1700000000", tmp_path / ".#a.py")
    proc = run_cli(str(tmp_path), *SELECT)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("TL104") == 1, proc.stdout
    assert f"warning: {tmp_path / '.#a.py'}: skipped: broken symbolic link (to me@host.4242:1700000000)" in proc.stderr
    assert "error" not in proc.stderr, proc.stderr


def test_show_files_warns_of_a_dangling_symlink_met_in_a_folder_walk(tmp_path):
    """--show-files leaves the link out as the check run does, and says so on stderr as the check run
    does (before, it left it out without a word)."""
    write(tmp_path / "a.py", FIXABLE)
    os.symlink("me@host.4242:1700000000", tmp_path / ".#a.py")
    proc = run_cli("--show-files", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{tmp_path / 'a.py'}\n"
    assert proc.stderr == f"warning: {tmp_path / '.#a.py'}: skipped: broken symbolic link (to me@host.4242:1700000000)\n"


def test_missing_path(tmp_path):
    path = str(tmp_path / "nope.py")
    proc = run_cli(path, *SELECT)
    assert_clean_error(proc, path, "no such file")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="running as root: permission bits do not stop root from reading (CAP_DAC_OVERRIDE), "
                           "and a folder without permissions does not stop root either")
def test_unreadable_file(tmp_path):
    path = write(tmp_path / "secret.py", FIXABLE, mode=0)
    try:
        proc = run_cli(path, *SELECT)
        assert_clean_error(proc, path, "ermission denied")
    finally:
        os.chmod(path, 0o644)


def test_directory_named_py(tmp_path):
    folder = tmp_path / "weird.py"
    folder.mkdir()
    write(folder / "inner.py", FIXABLE)
    proc = run_cli(str(folder), *SELECT)
    assert proc.returncode == 1 and "inner.py:2:10: TL104" in proc.stdout, proc.stderr


# -- files that are fine -------------------------------------------------------------------------------

def test_empty_file(tmp_path):
    path = write(tmp_path / "empty.py", b"")
    proc = run_cli(path, *SELECT, "--fix")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert open(path, "rb").read() == b""


def test_declared_latin1_keeps_its_bytes_after_a_fix(tmp_path):
    original = b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXABLE.encode()
    path = write(tmp_path / "latin1.py", original)
    proc = run_cli(path, *SELECT, "--fix")
    assert proc.returncode == 0, proc.stderr
    data = open(path, "rb").read()
    assert data == b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXED.encode()
    assert "é" in data.decode("latin-1")


def test_bom_is_kept(tmp_path):
    path = write(tmp_path / "bom.py", codecs.BOM_UTF8 + FIXABLE.encode())
    proc = run_cli(path, *SELECT, "--fix")
    assert proc.returncode == 0, proc.stderr
    assert open(path, "rb").read() == codecs.BOM_UTF8 + FIXED.encode()


def test_bom_with_latin1_cookie_is_an_error(tmp_path):
    path = write(tmp_path / "clash.py", codecs.BOM_UTF8 + b"# coding: latin-1\n" + FIXABLE.encode())
    proc = run_cli(path, *SELECT)
    assert_clean_error(proc, path, "encoding")


def test_crlf_is_kept(tmp_path):
    source = "from torch.utils.data import DataLoader\r\nloader = DataLoader(\r\n    ds,\r\n    num_workers=4,\r\n)\r\n"
    path = write(tmp_path / "crlf.py", source)
    proc = run_cli(path, *SELECT, "--fix")
    assert proc.returncode == 0, proc.stderr
    data = open(path, "rb").read()
    assert data == ("from torch.utils.data import DataLoader\r\nloader = DataLoader(\r\n    ds,\r\n    num_workers=4,\r\n"
                    "    prefetch_factor=4,\r\n)\r\n").encode()
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_helpers_a_fix_inserts_take_a_crlf_files_line_endings(tmp_path):
    # TL501 inserts a whole function (written with `\n`), as TL106 does its device-move helper: in a CRLF
    # file their lines end in CRLF too (tests/test_properties.py found bare LFs).
    source = ("import torch\r\nfrom torch.utils.data import DataLoader\r\nloader = DataLoader(ds)\r\n"
              "for step, (x, y) in enumerate(loader):\r\n    torch.save(model.state_dict(), 'ckpt.pt')\r\n"
              "    loss.backward()\r\n")
    path = write(tmp_path / "crlf_helper.py", source)
    proc = run_cli(path, "--select", "TL501", "--fix", "--unsafe-fixes", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    data = open(path, "rb").read()
    assert b"def _trainlint_async_save" in data and b"\n" not in data.replace(b"\r\n", b"")


def test_mixed_line_endings_are_kept(tmp_path):
    source = b"from torch.utils.data import DataLoader\r\nimport os\nloader = DataLoader(ds, num_workers=4)\r\nx = 1\n"
    path = write(tmp_path / "mixed.py", source)
    proc = run_cli(path, *SELECT, "--fix")
    assert proc.returncode == 0, proc.stderr
    assert open(path, "rb").read() == source.replace(b"num_workers=4)", b"num_workers=4, prefetch_factor=4)")


def test_read_only_file_is_not_fixed_and_keeps_its_mode(tmp_path):
    # As Ruff and Black, which cannot open it for writing: a rename into the writable folder would
    # replace a file its owner made read-only (and does, even for root, who may write anything).
    path = write(tmp_path / "ro.py", FIXABLE, mode=0o444)
    proc = run_cli(path, *SELECT, "--fix")
    assert proc.returncode == 2 and "ro.py: error: not fixed: the file is read-only" in proc.stderr
    assert open(path).read() == FIXABLE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_executable_mode_is_kept(tmp_path):
    path = write(tmp_path / "run.py", "#!/usr/bin/env python\n" + FIXABLE, mode=0o751)
    assert run_cli(path, *SELECT, "--fix").returncode == 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751


def test_fix_through_a_symlink_replaces_the_target(tmp_path):
    target = write(tmp_path / "real.py", FIXABLE)
    link = tmp_path / "link.py"
    os.symlink(target, link)
    assert run_cli(str(link), *SELECT, "--fix").returncode == 0
    assert os.path.islink(link)
    assert open(target).read() == FIXED


def test_one_file_under_several_names_is_checked_and_fixed_once(tmp_path):
    # A hard link and a symlink to a file in the same run: the second name's fix found the file
    # changed by the first's ("changed on disk since it was read", exit 2), or, through the
    # symlink, "4 fixed" was reported when 2 fixes were written. The first name in sorted order
    # is checked; the others are left out, with --fix or without.
    write(tmp_path / "a.py", FIXABLE)
    os.link(tmp_path / "a.py", tmp_path / "hard.py")
    write(tmp_path / "c.py", FIXABLE)
    os.symlink(tmp_path / "c.py", tmp_path / "b_link.py")
    proc = run_cli(str(tmp_path), *SELECT)
    assert proc.returncode == 1 and proc.stdout.count("TL104") == 2, proc.stdout
    assert "/a.py:2:10" in proc.stdout and "/b_link.py:2:10" in proc.stdout
    fixed = run_cli(str(tmp_path), *SELECT, "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Found 2 errors (2 fixed, 0 remaining)" in fixed.stdout + fixed.stderr
    assert (tmp_path / "hard.py").read_text() == (tmp_path / "c.py").read_text() == FIXED
    assert os.path.islink(tmp_path / "b_link.py")


# -- races, made deterministic -------------------------------------------------------------------------

def _cli(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_file_deleted_during_the_run(tmp_path, monkeypatch):
    doomed = write(tmp_path / "a_doomed.py", FIXABLE)
    other = write(tmp_path / "b_other.py", FIXABLE)
    real_read = runner_module.read_source

    def read_after_delete(path):
        if path == doomed:
            os.unlink(path)  # discovered, then deleted before it is read
        return real_read(path)

    monkeypatch.setattr(runner_module, "read_source", read_after_delete)
    result = _cli([doomed, other, *SELECT, "--fix"])
    assert result.exit_code == 2
    assert f"{doomed}: error: no such file" in result.output
    assert open(other).read() == FIXED  # the run went on
    assert not os.path.exists(doomed)  # not recreated


def test_file_modified_between_read_and_write_is_not_overwritten(tmp_path, monkeypatch):
    path = write(tmp_path / "edited.py", FIXABLE)
    real_write = runner_module.write_fixed
    edited = FIXABLE + "# saved by an editor meanwhile\n"

    def write_after_edit(source, text):
        with open(source.path, "w") as fh:
            fh.write(edited)
        return real_write(source, text)

    monkeypatch.setattr(runner_module, "write_fixed", write_after_edit)
    result = _cli([path, *SELECT, "--fix"])
    assert result.exit_code == 2
    assert f"{path}: error: not fixed: the file changed on disk since it was read" in result.output
    assert open(path).read() == edited
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".trainlint-")]  # no temporary left behind


def test_internal_error_is_reported_per_file_without_traceback(tmp_path, monkeypatch):
    broken = write(tmp_path / "a.py", FIXABLE)
    fine = write(tmp_path / "b.py", FIXABLE)
    import trainlint.engine as engine_module

    real_lint = engine_module.lint_text

    def lint_that_breaks(text, path, *args, **kwargs):
        if path == broken:
            raise ValueError("simulated bug")
        return real_lint(text, path, *args, **kwargs)

    # The runner imports the engine when it first needs it, so the engine's own name is patched.
    monkeypatch.setattr(engine_module, "lint_text", lint_that_breaks)
    result = _cli([broken, fine, *SELECT])
    assert result.exit_code == 2
    assert f"{broken}: error: internal error: ValueError: simulated bug" in result.output
    assert "Traceback" not in result.output
    assert f"{fine}:2:10: TL104" in result.output
